// The operands of a gated delta rule call as its kernels read them (CUDA sources of
// cuda/gdn/ only): the recurrent kernels (delta_rule.cu) take them as they are, the
// chunked ones (delta_rule_chunked.cuh) add their chunk table and pass.
#pragma once

#include <cstdint>

#include "vt/dtype.h"
#include "vt/tensor.h"

namespace vt::cuda::gdn {

// Shapes as vt/ops/gdn.h validates them: q and k [T, Hk, Dk], v [T, Hv, Dv] with the last
// dim contiguous (element strides *_t, *_h), g and beta f32 [T, Hv], state f32 [S, Hv, Dk,
// Dv], out [T, Hv, Dv] contiguous. Request b owns tokens [start[b], start[b + 1]) and
// state slot slot[b] (device pointers).
struct DeltaRuleParams {
  const void* q;
  DType q_dtype;
  int64_t q_t, q_h;
  const void* k;
  DType k_dtype;
  int64_t k_t, k_h;
  const void* v;
  DType v_dtype;
  int64_t v_t, v_h;
  const float* g;     // [T, Hv]
  const float* beta;  // [T, Hv]
  float* state;       // [S, Hv, Dk, Dv]
  void* out;          // [T, Hv, Dv]
  DType out_dtype;
  const int32_t* start;   // [B + 1]
  const int32_t* slot;    // [B]
  int hv, ratio, dk, dv;  // ratio = Hv / Hk; a kernel pads rows past dk with zeros
  float scale;
};

// The params of a call on validated tensors, the request layout already on the device.
inline DeltaRuleParams delta_rule_params(const Tensor& q, const Tensor& k, const Tensor& v,
                                         const Tensor& g, const Tensor& beta, float scale,
                                         const Tensor& state, const Tensor& out,
                                         const int32_t* start, const int32_t* slot) {
  return {.q = q.data_ptr(),
          .q_dtype = q.dtype(),
          .q_t = q.stride(0),
          .q_h = q.stride(1),
          .k = k.data_ptr(),
          .k_dtype = k.dtype(),
          .k_t = k.stride(0),
          .k_h = k.stride(1),
          .v = v.data_ptr(),
          .v_dtype = v.dtype(),
          .v_t = v.stride(0),
          .v_h = v.stride(1),
          .g = g.data<float>(),
          .beta = beta.data<float>(),
          .state = state.data<float>(),
          .out = out.data_ptr(),
          .out_dtype = out.dtype(),
          .start = start,
          .slot = slot,
          .hv = int(v.size(1)),
          .ratio = int(v.size(1) / q.size(1)),
          .dk = int(q.size(2)),
          .dv = int(v.size(2)),
          .scale = scale};
}

}  // namespace vt::cuda::gdn
