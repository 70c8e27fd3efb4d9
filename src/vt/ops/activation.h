// Activations, softmax and elementwise arithmetic.
//
// Layout: every tensor is seen as [rows, D] (the last dim stride 1, the leading
// dims collapsing to one or two row strides, see vt/ops/norm.h); out may alias an
// input exactly (in place), never partially.
// Dtypes: inputs and outputs in {f32, bf16, f16}, mixed freely.
// Numerics: f32 compute, one rounding at the output, except silu_and_mul with a narrow
// out (bf16/f16): silu(g) = g / (1 + exp(-g)) rounds to out's dtype before the product
// (the oracle's `act(gate) * up` on bf16 tensors, qwen3_5.md §9.1), which rounds again.
// Backends: CPU and CUDA (vt/cuda/elementwise/). CUDA softmax: x - max is the CPU's f32
// value; its expf (2 ulp) and tree sum differ from the CPU's glibc exp and sequential sum
// (up to ~3e-4 relative off at 151936 columns), so f32 outputs agree within 1e-3 relative
// there (the CUDA arm is within 5e-6 of double), narrow ones within an ulp.
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

// x [.., 2I] -> out [.., I]: out = silu(x[.., :I]) * x[.., I:] with silu(g) = g * sigmoid(g)
// (gate first, then up, as vLLM's fused gate_up_proj and SiluAndMul).
void silu_and_mul(Stream& s, const Tensor& x, Tensor& out);

// out = 1 / (1 + exp(-x)), elementwise; out has x's shape.
void sigmoid(Stream& s, const Tensor& x, Tensor& out);

// Softmax over the last dim, max-subtracted (exact for large logits); out has x's shape.
void softmax(Stream& s, const Tensor& x, Tensor& out);

// out = a + b and out = a * b, elementwise; a, b, out have one shape.
void add(Stream& s, const Tensor& a, const Tensor& b, Tensor& out);
void mul(Stream& s, const Tensor& a, const Tensor& b, Tensor& out);

}  // namespace vt
