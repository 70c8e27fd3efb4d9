// CUDA gated delta rule (vt/cuda/gdn.h): the token recurrence with the f32 state
// slice of a CTA in registers for the whole request. Per token, column e of the state:
//   S[:, e] *= exp(g);  m = S[:, e] . k;  u = beta (v[e] - m);
//   S[:, e] += k u;     out[e] = S[:, e] . (scale q)
// Bytes per decode step and (request, head): the f32 state read and written once
// (2 Dk Dv 4 B), k, q, v read; FLOPs 4 Dk Dv: memory-bound, ceiling the copy rate.
//
// Two kernels:
//   delta_rule_rows_kernel (default; Dv % 4 == 0): a CTA of 4 warps per (request, value
//     head, 32 value columns), its [Dk, 32] state slice in registers (a float4 of
//     columns and Dk / 16 rows per thread; 8 CTAs of 128 per SM); the layout and the
//     token math are gdn/delta_rows.cuh, shared with the fused decode step
//     (fused_recurrent.cu).
//   delta_rule_warp_kernel (Dv % 4 != 0 or an unaligned state, or the stream's
//     KernelConfig::gdn_decode = kWarp, VTLLM_GDN_DECODE=warp): the first version,
//     one warp per (request, value head, 32 columns), a [Dk, 32] slice in registers.
#include <algorithm>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn.h"
#include "vt/cuda/gdn/delta_rows.cuh"
#include "vt/cuda/gdn/params.cuh"
#include "vt/cuda/gdn/varlen.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kCols = kWarp;  // value columns per CTA, one per thread
// The tallest state slice instantiated. At 256 (past Qwen3.5's 128: odd configs only)
// the slice outgrows the registers of 8 CTAs per SM and partly spills: correct, slower.
constexpr int64_t kMaxDk = 256;

using DeltaParams = gdn::DeltaRuleParams;  // dk <= DK: rows past dk are zero padding

template <int DK>
__global__ void __launch_bounds__(kCols) delta_rule_warp_kernel(DeltaParams p) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  __shared__ float k_s[DK], q_s[DK];
  const int lane = threadIdx.x;
  const int col = blockIdx.x * kCols + lane, h = blockIdx.y, b = blockIdx.z;
  const bool active = col < p.dv;
  const int hk = h / p.ratio;
  float* S_g = p.state + ((int64_t(p.slot[b]) * p.hv + h) * p.dk) * p.dv + col;
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

using gdn_rows::kColLanes;
using gdn_rows::kColsPerCta;
using gdn_rows::kRowsPer;

// One CTA of gdn_rows::kThreads per (request, value head, kColsPerCta columns); the token
// math is gdn_rows::token_step (gdn/delta_rows.cuh).
template <int DK>
__global__ void __launch_bounds__(gdn_rows::kThreads, gdn_rows::kCtasPerSm)
    delta_rule_rows_kernel(DeltaParams p) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  __shared__ gdn_rows::Smem<DK> sm;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int col = blockIdx.x * kColsPerCta + 4 * (lane % kColLanes), h = blockIdx.y, b = blockIdx.z;
  const bool active = col < p.dv;  // dv % 4 == 0: all four columns or none
  const int hk = h / p.ratio;
  float* S_g = p.state + ((int64_t(p.slot[b]) * p.hv + h) * p.dk) * p.dv;
  float4 S[kRowsPer<DK>];
  gdn_rows::load_tile<DK>(S, S_g, p.dk, p.dv, warp, lane, col, active);
  const int64_t t_end = p.start[b + 1];
  for (int64_t t = p.start[b]; t < t_end; ++t) {
    for (int i = threadIdx.x; i < DK; i += gdn_rows::kThreads) {  // zero k rows: zero S rows
      sm.k[i] = i < p.dk ? load_f32(p.k, p.k_dtype, t * p.k_t + int64_t(hk) * p.k_h + i) : 0.0f;
      sm.q[i] =
          i < p.dk ? load_f32(p.q, p.q_dtype, t * p.q_t + int64_t(hk) * p.q_h + i) * p.scale : 0.0f;
    }
    if (warp == 0 && lane < kColLanes) {
      const int64_t v0 = t * p.v_t + int64_t(h) * p.v_h + col;
      sm.v[lane] =
          active ? make_float4(load_f32(p.v, p.v_dtype, v0), load_f32(p.v, p.v_dtype, v0 + 1),
                               load_f32(p.v, p.v_dtype, v0 + 2), load_f32(p.v, p.v_dtype, v0 + 3))
                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    const float decay = expf(p.g[t * p.hv + h]), bt = p.beta[t * p.hv + h];
    __syncthreads();  // k, q, v staged (and the last token's part_o read)
    const float4 osum = gdn_rows::token_step<DK>(S, sm, decay, bt, warp, lane);
    if (warp == 0 && lane < kColLanes && active) {
      const int64_t o0 = (t * p.hv + h) * p.dv + col;
      store_f32(p.out, p.out_dtype, o0, osum.x);
      store_f32(p.out, p.out_dtype, o0 + 1, osum.y);
      store_f32(p.out, p.out_dtype, o0 + 2, osum.z);
      store_f32(p.out, p.out_dtype, o0 + 3, osum.w);
    }
  }
  gdn_rows::store_tile<DK>(S, S_g, p.dk, p.dv, warp, lane, col, active);
}

}  // namespace

void gated_delta_rule(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& g, const Tensor& beta, float scale, const Varlen& req,
                      const Tensor& state, const Tensor& out) {
  const int64_t B = req.batch(), hv = v.size(1), dk = q.size(2), dv = v.size(2);
  if (B == 0 || hv == 0 || dv == 0) return;
  VT_CHECK(dk >= 1 && dk <= kMaxDk, "gated_delta_rule (CUDA): key head_dim ", dk,
           " exceeds the kernels' ", kMaxDk);
  VT_CHECK(B <= 65535 && hv <= 65535, "gated_delta_rule (CUDA): grid too large");
  StreamState& st = s.cuda_state();
  set_device(st);
  const auto [d_start, d_slot] = device_varlen(st, req);
  const DeltaParams p =
      gdn::delta_rule_params(q, k, v, g, beta, scale, state, out, d_start, d_slot);
  // The smallest instantiated state height that holds dk (zero-padded past dk).
  const bool aligned = dv % 4 == 0 && reinterpret_cast<uintptr_t>(state.data_ptr()) % 16 == 0;
  if (aligned && s.kernel_config().gdn_decode == GdnDecodeKernel::kRows) {
    const dim3 grid(unsigned((dv + kColsPerCta - 1) / kColsPerCta), unsigned(hv), unsigned(B));
    const auto rows = [&](auto kernel) {
      launch_kernel(st, "delta_rule_rows_kernel", kernel, grid, dim3(gdn_rows::kThreads), 0, p);
    };
    if (dk <= 32)
      rows(delta_rule_rows_kernel<32>);
    else if (dk <= 64)
      rows(delta_rule_rows_kernel<64>);
    else if (dk <= 128)
      rows(delta_rule_rows_kernel<128>);
    else
      rows(delta_rule_rows_kernel<256>);
    return;
  }
  const dim3 grid(unsigned((dv + kCols - 1) / kCols), unsigned(hv), unsigned(B));
  const char* name = "delta_rule_warp_kernel";
  if (dk <= 32)
    launch_kernel(st, name, delta_rule_warp_kernel<32>, grid, dim3(kCols), 0, p);
  else if (dk <= 64)
    launch_kernel(st, name, delta_rule_warp_kernel<64>, grid, dim3(kCols), 0, p);
  else if (dk <= 128)
    launch_kernel(st, name, delta_rule_warp_kernel<128>, grid, dim3(kCols), 0, p);
  else
    launch_kernel(st, name, delta_rule_warp_kernel<256>, grid, dim3(kCols), 0, p);
}

}  // namespace vt::cuda
