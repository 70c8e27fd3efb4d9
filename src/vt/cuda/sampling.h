// CUDA arms of embedding (vt/ops/embedding.h), argmax and sample (vt/ops/sampling.h).
// No CUDA headers; arguments arrive validated. Defined in cuda/sampling/.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/sampling.h"

namespace vt::cuda {

// ids: i32/i64 [T] (any stride) on the CPU or the device, already range-checked.
void embedding(Stream& s, const Rows& table, const Tensor& ids, const Rows& out);
// out: i32/i64 [T] on the device, any stride.
void argmax(Stream& s, const Rows& logits, const Tensor& out);
// Waits for the stream; the result is on the host.
SampleOutput sample(Stream& s, const Rows& logits, const SampleBatch& batch);

}  // namespace vt::cuda
