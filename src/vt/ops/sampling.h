// Sampling primitives.
//
// argmax(s, logits, out): out[t] = the index of the largest logits[t, :].
//   logits [T, V] in {f32, bf16, f16}, last dim stride 1; out [T] in {i32, i64}.
//   Ties go to the lowest index and NaN counts as the largest value (as torch.argmax).
// Backends: CPU and CUDA (one block per row).
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

void argmax(Stream& s, const Tensor& logits, Tensor& out);

}  // namespace vt
