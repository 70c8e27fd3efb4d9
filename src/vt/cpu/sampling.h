// CPU arm of vt::sample (vt/ops/sampling.h), internal to vt. The batch arrives
// validated. The CUDA arm's selection algorithm run sequentially; the engine's
// Sampler is the sort-based reference both are checked against.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/sampling.h"

namespace vt::cpu {

SampleOutput sample(Stream& s, const Rows& logits, const SampleBatch& batch);

}  // namespace vt::cpu
