// Ops of bidirectional encoders (the Qwen3.5 vision tower, qwen3_5.md §12): LayerNorm,
// GELU, a weighted row gather (the interpolated position embedding) and attention
// restricted to segments of a packed token axis.
//
// Layout: row-wise ops see tensors as [rows, D] (vt/ops/args.h Rows: last dim stride 1,
// leading dims collapsing to one or two row strides); out has x's shape and may be x.
// Dtypes: {f32, bf16, f16} for activations and weights, mixed freely.
// Numerics: inputs widened to f32, f32 compute, one rounding at out (the oracle's
// `F.layer_norm` / `F.gelu` on bf16 tensors compute in f32 and round once).
// Backends: CPU (the reference, vt/cpu/encoder.cpp) and CUDA (vt/cuda/encoder/).
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

// torch.nn.LayerNorm over the last dim: out = (x - mean) / sqrt(var + eps) * w + b with
// the biased variance (mean of squared deviations), w and b [D] contiguous.
void layer_norm(Stream& s, const Tensor& x, const Tensor& w, const Tensor& b, float eps,
                Tensor& out);

// The residual step before a LayerNorm: h = R(h + r) in place (add's one rounding to h's
// dtype), then out = layer_norm(h, w, b, eps) of the rounded h. Bit-equal to add(h, r, h)
// followed by layer_norm on every backend; CUDA reads h and r once for both. r has h's
// shape and may be h itself; out has h's shape and must not overlap h or r.
void add_layer_norm(Stream& s, Tensor& h, const Tensor& r, const Tensor& w, const Tensor& b,
                    float eps, Tensor& out);

// kTanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (gelu_pytorch_tanh)
// kErf:  0.5 x (1 + erf(x / sqrt(2)))                      (nn.GELU(), exact)
enum class GeluKind { kTanh, kErf };
void gelu(Stream& s, const Tensor& x, GeluKind kind, Tensor& out);

// out[n, :] = R( sum_k F(table[idx[n, k], :]) * weight[n, k] ), the products and the sum
// in f32 in k order, one rounding. table [V, D] (rows of one stride), idx [N, K] i32 in
// [0, V), weight [N, K] f32, out [N, D] contiguous; idx and weight contiguous, on s's
// device.
void weighted_gather(Stream& s, const Tensor& table, const Tensor& idx, const Tensor& weight,
                     Tensor& out);

// Non-causal scaled-dot-product attention inside segments of a packed token axis:
// segment i is tokens [cu_seqlens[i], cu_seqlens[i+1]); token n attends to every token
// of its own segment and to no other. q, k, v, out [N, heads, head_dim] (head_dim stride
// 1, other strides free: per-head views of a fused qkv are fine), one head count (no
// GQA); cu_seqlens [S+1] i32 on the CPU, ascending, cu_seqlens[0] = 0, cu_seqlens[S] = N.
// out = softmax(q k^T * scale) v per head, softmax in f32; f32 CPU arm exact up to
// summation order; the CUDA arm takes bf16/f16 q/k/v on tensor cores with f32
// accumulation and rounds P to the input dtype before P.V (as flash attention does).
void segment_attention(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& cu_seqlens, float scale, Tensor& out);

}  // namespace vt
