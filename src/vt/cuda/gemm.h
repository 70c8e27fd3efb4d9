// CUDA arm of vt/ops/gemm.h (no CUDA headers; defined in cuda/gemm/). Arguments
// arrive validated: x [M, K], w [N, K], out [M, N] with the last dim contiguous,
// bias [N] contiguous or undefined.
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cuda {

// out = x . w^T (+ bias) through cuBLASLt, f32 accumulation (CUBLAS_COMPUTE_32F: f32
// inputs get true f32 products, not TF32). Direct paths: bf16 x bf16 -> bf16 or f32,
// f16 x f16 -> f16 or f32, f32 x f32 -> f32. Other pairs widen both operands to f32
// first; a bias, or an output dtype of neither kind, goes through an f32 result and
// one rounding pass, so out is always rounded once.
void linear(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out);

}  // namespace vt::cuda
