// CPU arms of vt/ops/encoder.h (internal to vt): arguments arrive validated by
// vt/ops/encoder.cpp; these only compute, in f32 with one rounding at out.
#pragma once

#include <cstdint>
#include <vector>

#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"
#include "vt/ops/encoder.h"

namespace vt::cpu {

void layer_norm(Stream& s, const Rows& x, const Tensor& w, const Tensor& b, float eps,
                const Rows& out);
void gelu(Stream& s, const Rows& x, GeluKind kind, const Rows& out);
// table [V, D] rows of one stride; idx [N, K] i32, weight [N, K] f32, out [N, D]
// contiguous. Throws naming the entry when an index is outside [0, V).
void weighted_gather(Stream& s, const Rows& table, const Tensor& idx, const Tensor& weight,
                     const Tensor& out);
// q, k, v, out [tokens, heads, head_dim] (HeadsView strides); cu_seqlens validated.
void segment_attention(Stream& s, const HeadsView& q, const HeadsView& k, const HeadsView& v,
                       const std::vector<int32_t>& cu_seqlens, float scale, const HeadsView& out);

}  // namespace vt::cpu
