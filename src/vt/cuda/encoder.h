// CUDA arms of vt/ops/encoder.h. No CUDA headers; arguments arrive validated by the
// entry points in vt/ops/encoder.cpp. Defined in cuda/encoder/.
#pragma once

#include <cstdint>
#include <vector>

#include "vt/ops/args.h"
#include "vt/ops/encoder.h"

namespace vt::cuda {

void layer_norm(Stream& s, const Rows& x, const Tensor& w, const Tensor& b, float eps,
                const Rows& out);
// h = R(h + r) in place, then out = layer_norm(h): one kernel (layer_norm's, reading r).
void add_layer_norm(Stream& s, const Rows& h, const Rows& r, const Tensor& w, const Tensor& b,
                    float eps, const Rows& out);
void gelu(Stream& s, const Rows& x, GeluKind kind, const Rows& out);
// table: [V, D] rows; idx [N, K] i32, weight [N, K] f32, out [N, D]: contiguous, device.
void weighted_gather(Stream& s, const Rows& table, const Tensor& idx, const Tensor& weight,
                     const Tensor& out);
// q, k, v, out [N, heads, head_dim] with element strides (token, head) each and head_dim
// stride 1; cu_seqlens are the host values (the arm uploads what it needs).
struct HeadsArg {
  void* data;
  DType dtype;
  int64_t token_stride, head_stride;
};
void segment_attention(Stream& s, const HeadsArg& q, const HeadsArg& k, const HeadsArg& v,
                       int64_t tokens, int64_t heads, int64_t head_dim,
                       const std::vector<int32_t>& cu_seqlens, float scale, const HeadsArg& out);
// The kernel segment_attention launches for q, k, v of head_dim on s (its dispatch rule,
// exposed for tests): wgmma (sm_90a), mma.sync, or CUDA cores.
enum class SegmentAttentionKernel { kWgmma, kMmaSync, kCudaCores };
SegmentAttentionKernel segment_attention_kernel(Stream& s, const HeadsArg& q, const HeadsArg& k,
                                                const HeadsArg& v, int64_t head_dim);

}  // namespace vt::cuda
