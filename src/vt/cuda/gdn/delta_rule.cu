// CUDA gated delta rule (vt/cuda/gdn.h): the token recurrence, one CTA (one warp) per
// (request, value head, 32 value columns), the [Dk, 32] state slice in registers.
//
// Per token, thread e (column e) with k, q staged in shared memory:
//   S[:, e] *= exp(g);  m = S[:, e] . k;  u = beta (v[e] - m);
//   S[:, e] += k u;     out[e] = S[:, e] . (scale q)
// Bytes per decode step and (request, head): the f32 state read and written once
// (2 Dk Dv 4 B), k, q, v read; FLOPs 4 Dk Dv: memory-bound, ceiling the copy rate.
#include <algorithm>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kCols = kWarp;  // value columns per CTA, one per thread

struct DeltaParams {
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
  const int32_t* start;  // [B + 1]
  const int32_t* slot;   // [B]
  int hv, ratio, dk, dv;  // dk <= DK: rows past dk are zero padding
  float scale;
};

template <int DK>
__global__ void __launch_bounds__(kCols) delta_rule_kernel(DeltaParams p) {
  __shared__ float k_s[DK], q_s[DK];
  const int lane = threadIdx.x;
  const int col = blockIdx.x * kCols + lane, h = blockIdx.y, b = blockIdx.z;
  const bool active = col < p.dv;
  const int hk = h / p.ratio;
  float* S_g = p.state + ((int64_t(p.slot[b]) * p.hv + h) * DK) * p.dv + col;
  float S[DK];
#pragma unroll
  for (int i = 0; i < DK; ++i) S[i] = active && i < p.dk ? S_g[int64_t(i) * p.dv] : 0.0f;
  const int64_t t_end = p.start[b + 1];
  for (int64_t t = p.start[b]; t < t_end; ++t) {
    for (int i = lane; i < DK; i += kCols) {  // zero k rows keep the padded S rows zero
      k_s[i] = i < p.dk ? load_f32(p.k, p.k_dtype, t * p.k_t + int64_t(hk) * p.k_h + i) : 0.0f;
      q_s[i] = i < p.dk ? load_f32(p.q, p.q_dtype, t * p.q_t + int64_t(hk) * p.q_h + i) * p.scale
                        : 0.0f;
    }
    __syncwarp();
    const float decay = expf(p.g[t * p.hv + h]), bt = p.beta[t * p.hv + h];
    const float vv = active ? load_f32(p.v, p.v_dtype, t * p.v_t + int64_t(h) * p.v_h + col) : 0.0f;
    float m0 = 0.0f, m1 = 0.0f, m2 = 0.0f, m3 = 0.0f;  // four chains hide the FMA latency
#pragma unroll
    for (int i = 0; i < DK; i += 4) {
      S[i] *= decay;
      S[i + 1] *= decay;
      S[i + 2] *= decay;
      S[i + 3] *= decay;
      m0 += S[i] * k_s[i];
      m1 += S[i + 1] * k_s[i + 1];
      m2 += S[i + 2] * k_s[i + 2];
      m3 += S[i + 3] * k_s[i + 3];
    }
    const float u = bt * (vv - ((m0 + m1) + (m2 + m3)));
    float o0 = 0.0f, o1 = 0.0f, o2 = 0.0f, o3 = 0.0f;
#pragma unroll
    for (int i = 0; i < DK; i += 4) {
      S[i] += k_s[i] * u;
      S[i + 1] += k_s[i + 1] * u;
      S[i + 2] += k_s[i + 2] * u;
      S[i + 3] += k_s[i + 3] * u;
      o0 += S[i] * q_s[i];
      o1 += S[i + 1] * q_s[i + 1];
      o2 += S[i + 2] * q_s[i + 2];
      o3 += S[i + 3] * q_s[i + 3];
    }
    if (active) store_f32(p.out, p.out_dtype, (t * p.hv + h) * p.dv + col, (o0 + o1) + (o2 + o3));
    __syncwarp();  // k_s, q_s are overwritten by the next token
  }
  if (active) {
#pragma unroll
    for (int i = 0; i < DK; ++i)
      if (i < p.dk) S_g[int64_t(i) * p.dv] = S[i];
  }
}

}  // namespace

void gated_delta_rule(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& g, const Tensor& beta, float scale, const Varlen& req,
                      const Tensor& state, const Tensor& out) {
  const int64_t B = req.batch(), hv = v.size(1), dk = q.size(2), dv = v.size(2);
  if (B == 0 || hv == 0 || dv == 0) return;
  VT_CHECK(dk >= 1 && dk <= 128, "gated_delta_rule (CUDA): key head_dim ", dk,
           " exceeds the kernel's 128");
  VT_CHECK(B <= 65535 && hv <= 65535, "gated_delta_rule (CUDA): grid too large");
  StreamState& st = s.cuda_state();
  set_device(st);
  const int32_t *d_start = req.d_start, *d_slot = req.d_slot;
  if (!req.on_device()) {
    std::vector<int32_t> idx;
    for (int64_t x : req.start) idx.push_back(int32_t(x));
    for (int64_t x : req.slot) idx.push_back(int32_t(x));
    const int32_t* d = upload_indices(st, idx);
    d_start = d;
    d_slot = d + B + 1;
  }
  DeltaParams p{q.data_ptr(),     q.dtype(),  q.stride(0),   q.stride(1), k.data_ptr(),
                k.dtype(),        k.stride(0), k.stride(1),  v.data_ptr(), v.dtype(),
                v.stride(0),      v.stride(1), g.data<float>(), beta.data<float>(),
                state.data<float>(), out.data_ptr(), out.dtype(), d_start, d_slot, int(hv),
                int(hv / q.size(1)), int(dk), int(dv), scale};
  const dim3 grid(unsigned((dv + kCols - 1) / kCols), unsigned(hv), unsigned(B));
  // The smallest instantiated state height that holds dk (zero-padded past dk).
  if (dk <= 32)
    delta_rule_kernel<32><<<grid, kCols, 0, st.stream>>>(p);
  else if (dk <= 64)
    delta_rule_kernel<64><<<grid, kCols, 0, st.stream>>>(p);
  else
    delta_rule_kernel<128><<<grid, kCols, 0, st.stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("delta_rule_kernel");
}

}  // namespace vt::cuda
