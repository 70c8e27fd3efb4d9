// Matrix products.
//
// linear(s, x, w, out, bias): out = x . w^T (+ bias), the PyTorch nn.Linear convention.
//   x [M, K] in {f32, bf16, f16}, last dim stride 1 (any row stride);
//   w [N, K] in {f32, bf16, f16} (PyTorch [out, in] layout), last dim stride 1;
//   bias (optional, undefined = none) [N] in {f32, bf16, f16}, contiguous;
//   out [M, N] in {f32, bf16, f16}, last dim stride 1, must not overlap x or w.
//   Numerics: products and sums in f32 (bf16/f16 weights are widened to f32 on the
//   fly, a block of rows at a time), one rounding at the output. The summation
//   order is blocked, so results differ from a sequential sum by f32 rounding.
// linear_gelu(s, x, w, bias, kind, out): out = gelu(x . w^T + bias) with vt/ops/encoder.h's
//   GELU of `kind` applied to the f32 sum (bias added) and one rounding at out; operands
//   as linear's. linear followed by gelu rounds twice: the two differ by out's rounding.
//   CUDA: cuBLASLt's GELU epilogue (the tanh form) for kTanh when x and w share a dtype, out
//   is theirs or f32 and the bias, if any, is out's; else an f32 product and a gelu pass.
// matmul(s, a, b, out): out = a . b with a [M, K], b [K, N] (any strides); same
//   dtypes and numerics. Packs b^T once, then runs linear.
// Backends: CPU (thread pool; see cpu/gemm.cpp for the kernel choice) and CUDA
//   (a skinny tensor-core kernel for decode-sized M, cuBLASLt otherwise, both f32
//   accumulation; vt/cuda/gemm.h has the rule and which dtype pairs run directly). On
//   CUDA the summation order is the chosen kernel's, fixed per shape and device.
#pragma once

#include "vt/ops/encoder.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

void linear(Stream& s, const Tensor& x, const Tensor& w, Tensor& out, const Tensor& bias = {});
void linear_gelu(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias, GeluKind kind,
                 Tensor& out);
void matmul(Stream& s, const Tensor& a, const Tensor& b, Tensor& out);

}  // namespace vt
