// Rotary position embedding, NeoX (rotate-half) style.
//
// rope_neox(s, x, cos_sin, out): for each token t and head h, on the first
//   R = cos_sin.size(1) dims of x[t, h, :] (R even, R <= head_dim), with
//   c = cos_sin[t, :R/2], s = cos_sin[t, R/2:] and i < R/2:
//     out[i]       = x[i] * c[i] - x[i + R/2] * s[i]
//     out[i + R/2] = x[i + R/2] * c[i] + x[i] * s[i]
//   and out = x on dims [R, head_dim) (partial rotary).
//   x, out [T, heads, head_dim] in {f32, bf16, f16}: last dim stride 1, other
//   strides free (a view into a fused qkv is fine); out may be x (in place).
//   cos_sin [T, R] f32, contiguous: a per-token table, so positions of any kind
//   (1-D, or MRoPE's 3 sections) are the table builder's business.
//   Numerics: f32 out: f32 compute. Narrow out (bf16/f16): the rotation in out's dtype
//   arithmetic, as the oracle's `x * cos + rotate_half(x) * sin` on bf16 tensors
//   (qwen3_5.md §7.4): each product rounds, then their sum; x and the table are taken
//   as they are (the model rounds the table to the activation dtype).
// rope_cos_sin_1d(positions, R, theta): the CPU table for 1-D positions [T]
//   (i32/i64): inv_freq[i] = 1 / theta^(2i/R) and angle = pos * inv_freq[i], both in
//   f32 as HF's default rope does, then cos/sin of the f32 angle.
// Backends: CPU.
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

void rope_neox(Stream& s, const Tensor& x, const Tensor& cos_sin, Tensor& out);
Tensor rope_cos_sin_1d(const Tensor& positions, int64_t rotary_dim, double theta);

}  // namespace vt
