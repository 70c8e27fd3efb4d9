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
//   Numerics: f32 out, or math = RopeMath::kF32: f32 compute, one rounding to out's
//   dtype (the vision tower's rotary, which transformers runs on x.float(), §12.3).
//   Narrow out (bf16/f16) with RopeMath::kOutDtype: the rotation in out's dtype
//   arithmetic, as the oracle's `x * cos + rotate_half(x) * sin` on bf16 tensors
//   (qwen3_5.md §7.4): each product rounds, then their sum; x and the table are taken
//   as they are (the model rounds the table to the activation dtype).
// rope_cos_sin_1d(positions, D, theta): the CPU table for 1-D positions [T]
//   (i32/i64, on the CPU), [T, R] with R = rope_table_width(D) = 2 ceil(D/2):
//   inv_freq[i] = rope_inv_freq(D, theta)[i] = 1 / theta^(2i/D) for i < R/2 and
//   angle = f32(pos) * inv_freq[i], both in f32 as HF's default rope does, then cos/sin
//   of the f32 angle computed in double and rounded to f32. D is transformers' rotary
//   `dim` (head_dim x partial_rotary_factor); when it is odd, HF still rotates R dims
//   (cat(freqs, freqs)) with the exponents over D, and so does this table.
// rope_cos_sin_1d(s, positions, theta, out): the same table on s's device, D = R: positions
//   [T] i32/i64 and out [T, R] f32 contiguous (R even), both on s's device. The CUDA arm takes
//   inv_freq from the host (the same f32 values) and the f32 angle, then double
//   sincos: its double cos/sin are within 2 ulp (glibc's within 1), so an entry equals
//   the CPU's unless that double lands next to an f32 rounding boundary (about 1 in
//   10^8 entries), where the two differ by one f32 ulp (<= 2^-24). R <= 1024 on CUDA.
// Backends: CPU; CUDA (vt/cuda/rope/rope.cu) for rope_neox (bit-identical to the CPU:
//   the same f32 operations, unfused) and the device form of rope_cos_sin_1d.
#pragma once

#include <cstdint>
#include <vector>

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

// The arithmetic of rope_neox on a narrow out: out's dtype per product, or f32.
enum class RopeMath { kOutDtype, kF32 };

void rope_neox(Stream& s, const Tensor& x, const Tensor& cos_sin, Tensor& out,
               RopeMath math = RopeMath::kOutDtype);
Tensor rope_cos_sin_1d(const Tensor& positions, int64_t rotary_dim, double theta);
void rope_cos_sin_1d(Stream& s, const Tensor& positions, double theta, Tensor& out);
// inv_freq[i] = 1 / theta^(2i / D) in f32 for i < ceil(D/2): every table builder's frequencies.
std::vector<float> rope_inv_freq(int64_t rotary_dim, double theta);
// The table's width (dims rotated) for rotary dim D: 2 ceil(D/2), as HF's cat(freqs, freqs).
int64_t rope_table_width(int64_t rotary_dim);

}  // namespace vt
