// CPU arm of vt::sample (vt/ops/sampling.h), internal to vt. The batch arrives
// validated. Straightforward and sort-based: the reference the CUDA arm's radix
// selects are checked against.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/sampling.h"

namespace vt::cpu {

SampleOutput sample(Stream& s, const Rows& logits, const SampleBatch& batch);

}  // namespace vt::cpu
