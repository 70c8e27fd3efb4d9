// CUDA gdn_fused_recurrent (vt/cuda/gdn.h): the GDN layer between the conv and out_proj
// for the token recurrence in one kernel, the decode step's l2_normalize, gdn_gates,
// gated_delta_rule_recurrent and gated_rms_norm launches made one.
//
// A CTA of Dk / 8 warps per (value head, request), the recurrent op's rows layout
// (gdn/delta_rows.cuh: the [Dk, Dv] state slice in registers, the token math shared with
// delta_rule_rows_kernel). Per token of the request:
//   warp 0 l2-normalises the q head row and scales it, warp 1 the k row, warp 2 stages
//   v and its lane 0 computes the gates (gdn/gates.cuh, gates_kernel's code), warp 3
//   stages silu(z) for the norm (so no load waits after the step);
//   the CTA runs the token (gdn_rows::token_step);
//   warp 0 rounds the head's out to out's dtype and applies the gated RMSNorm.
// The l2 and gated norms repeat row_norm_kernel's arithmetic (cuda/norm/l2_gated.cu:
// lane-strided f32 partials, warp_sum, rsqrtf, its rounding points) so that every
// value equals the unfused launches' bit for bit: q and k in f32, beta rounded to
// beta_round, o rounded to out's dtype before the norm, then R(o r), R(w n) and
// R(n silu(z)) for a narrow out. Dk <= 128 (32, 64, 128 instantiated; others padded),
// Dv <= 128 with Dv % 4 == 0.
//
// Bytes per token and (request, head): the f32 state read and written (2 Dk Dv 4 B) plus
// the q, k, v, z rows; memory-bound like the recurrent op, ceiling the copy rate.
#include <cstdint>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn.h"
#include "vt/cuda/gdn/delta_rows.cuh"
#include "vt/cuda/gdn/gates.cuh"
#include "vt/cuda/gdn/varlen.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/stream_state.h"
#include "vt/ops/gdn.h"

namespace vt::cuda {

namespace {

using gdn_rows::kColsPerCta;
using gdn_rows::kRowsPerWarp;

// [T, heads, D] with head_dim contiguous: element i of (t, head) at t * t_stride +
// head * h_stride + i.
struct HeadsRef {
  const void* data;
  DType dtype;
  int64_t t_stride, h_stride;
  __device__ __forceinline__ int64_t at(int64_t t, int64_t head) const {
    return t * t_stride + head * h_stride;
  }
};

HeadsRef heads_ref(const Tensor& t) { return {t.data_ptr(), t.dtype(), t.stride(0), t.stride(1)}; }

struct FusedParams {
  HeadsRef q, k, v, z;
  RowsRef a, b;  // [T, Hv] gate inputs
  const void* a_log;
  DType a_log_dtype;
  const void* dt_bias;
  DType dt_bias_dtype;
  DType beta_round;
  const void* norm_w;  // [Dv]
  DType norm_w_dtype;
  float eps, scale;
  float* state;  // [S, Hv, Dk, Dv]
  void* out;     // [T, Hv, Dv] contiguous
  DType out_dtype;
  const int32_t* start;  // [B + 1]
  const int32_t* slot;   // [B]
  int hv, ratio, dk, dv;
};

// dst[i] = x[i] / sqrt(sum x^2 + eps) * mul for i < n, 0 for n <= i < DK: one warp, the
// row in registers (lane l: l, l + 32, ...), row_norm_kernel<false>'s order
// (cuda/norm/l2_gated.cu) and the recurrence's q scaling after it (a separate f32
// product, as the unfused path stores then scales).
template <int DK>
__device__ __forceinline__ void l2_row(const HeadsRef& x, int64_t off, int n, float mul, float* dst,
                                       int lane) {
  constexpr int kPerLane = DK / kWarp;
  float xv[kPerLane];
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int i = lane + j * kWarp;
    xv[j] = i < n ? load_f32(x.data, x.dtype, off + i) : 0.0f;
  }
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) ss += xv[j] * xv[j];  // + 0 past n: the same sum
  ss = warp_sum(ss);
  const float inv = rsqrtf(ss + kGdnL2NormEps);
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) dst[lane + j * kWarp] = xv[j] * inv * mul;
}

template <int DK>
__global__ void __launch_bounds__(DK / kRowsPerWarp * kWarp, 1024 / (DK / kRowsPerWarp * kWarp))
    gdn_fused_recurrent_kernel(FusedParams p) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  __shared__ gdn_rows::Smem<DK> sm;
  __shared__ float o_s[kColsPerCta];  // the token's out, rounded to out's dtype
  __shared__ float gate_s[2];         // the token's decay exp(g) and beta
  __shared__ float w_s[kColsPerCta];  // the norm weight
  // silu(z) of the token, by token parity: warp 3 stages token t + 1 while warp 0 may
  // still read token t's (it cannot get two tokens ahead: the barriers between).
  __shared__ float silu_z_s[2][kColsPerCta];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int col = 4 * lane, h = blockIdx.x, b = blockIdx.y;
  const bool active = col < p.dv;  // dv % 4 == 0: all four columns or none
  const int hk = h / p.ratio, row0 = warp * kRowsPerWarp;
  float* S_g = p.state + ((int64_t(p.slot[b]) * p.hv + h) * p.dk) * p.dv;
  float4 S[kRowsPerWarp];
  gdn_rows::load_tile(S, S_g, p.dk, p.dv, row0, col, active);
  if (warp == 3)
    for (int i = lane; i < p.dv; i += kWarp) w_s[i] = load_f32(p.norm_w, p.norm_w_dtype, i);
  const int64_t t_end = p.start[b + 1];
  for (int64_t t = p.start[b]; t < t_end; ++t) {
    if (warp == 0) {
      l2_row<DK>(p.q, p.q.at(t, hk), p.dk, p.scale, sm.q, lane);
    } else if (warp == 1) {
      l2_row<DK>(p.k, p.k.at(t, hk), p.dk, 1.0f, sm.k, lane);
    } else if (warp == 2) {
      const int64_t v0 = p.v.at(t, h) + col;
      sm.v[lane] = active ? make_float4(load_f32(p.v.data, p.v.dtype, v0),
                                        load_f32(p.v.data, p.v.dtype, v0 + 1),
                                        load_f32(p.v.data, p.v.dtype, v0 + 2),
                                        load_f32(p.v.data, p.v.dtype, v0 + 3))
                          : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (lane == 0) {
        // exp of the f32 g, as the recurrence reads gdn_gates' output.
        gate_s[0] = expf(gdn_gate::log_decay(load_f32(p.a.row(t), p.a.dtype, h),
                                             load_f32(p.a_log, p.a_log_dtype, h),
                                             load_f32(p.dt_bias, p.dt_bias_dtype, h)));
        gate_s[1] = gdn_gate::beta(load_f32(p.b.row(t), p.b.dtype, h), p.beta_round);
      }
    } else if (warp == 3) {
      // The norm's gate now, off the path after the token's step.
      const int64_t z0 = p.z.at(t, h);
      for (int i = lane; i < p.dv; i += kWarp)
        silu_z_s[t & 1][i] = siluf(load_f32(p.z.data, p.z.dtype, z0 + i));
    }
    __syncthreads();  // q, k, v, gates, silu(z) staged (and the last token's part_o read)
    const float4 o = gdn_rows::token_step<DK>(S, sm, gate_s[0], gate_s[1], warp, lane);
    if (warp == 0) {
      // gated_rms_norm of the head (row_norm_kernel<true>'s order) on out rounded to its
      // dtype, as the unfused path stores o and the norm reads it back.
      if (active) {
        o_s[col] = round_to(o.x, p.out_dtype);
        o_s[col + 1] = round_to(o.y, p.out_dtype);
        o_s[col + 2] = round_to(o.z, p.out_dtype);
        o_s[col + 3] = round_to(o.w, p.out_dtype);
      }
      __syncwarp();
      float ss = 0.0f;
      for (int i = lane; i < p.dv; i += kWarp) ss += o_s[i] * o_s[i];
      ss = warp_sum(ss);
      const float inv = rsqrtf(ss / float(p.dv) + p.eps);
      const int64_t y0 = (t * p.hv + h) * p.dv;
      const float* silu_z = silu_z_s[t & 1];
      for (int i = lane; i < p.dv; i += kWarp) {
        float v = o_s[i] * inv;
        if (p.out_dtype != DType::kF32)
          v = round_to(round_to(v, p.out_dtype) * w_s[i], p.out_dtype) * silu_z[i];
        else
          v = v * w_s[i] * silu_z[i];
        store_f32(p.out, p.out_dtype, y0 + i, v);
      }
    }
  }
  gdn_rows::store_tile(S, S_g, p.dk, p.dv, row0, col, active);
}

}  // namespace

bool gdn_fused_recurrent_supports(int64_t dk, int64_t dv) {
  return dk >= 1 && dk <= 128 && dv >= 1 && dv <= kColsPerCta && dv % 4 == 0;
}

void gdn_fused_recurrent(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& z, const Rows& a, const Rows& b, const Tensor& A_log,
                         const Tensor& dt_bias, DType beta_round, float scale, const Tensor& norm_w,
                         float eps, const Varlen& req, const Tensor& state, const Tensor& out) {
  const char* op = "gdn_fused_recurrent (CUDA)";
  const int64_t B = req.batch(), hv = v.size(1), dk = q.size(2), dv = v.size(2);
  if (B == 0 || hv == 0 || dv == 0) return;
  VT_CHECK(gdn_fused_recurrent_supports(dk, dv), op, ": head dims ", dk, " x ", dv,
           ": the kernel takes Dk <= 128 and Dv <= ", kColsPerCta,
           " with Dv % 4 == 0 (one CTA holds a head's columns for its norm)");
  VT_CHECK(reinterpret_cast<uintptr_t>(state.data_ptr()) % 16 == 0, op,
           ": state is not 16-byte aligned");
  VT_CHECK(B <= 65535 && hv < (int64_t(1) << 31), op, ": grid too large");
  StreamState& st = s.cuda_state();
  set_device(st);
  const auto [d_start, d_slot] = device_varlen(st, req);
  const FusedParams p{.q = heads_ref(q),
                      .k = heads_ref(k),
                      .v = heads_ref(v),
                      .z = heads_ref(z),
                      .a = rows_ref(a),
                      .b = rows_ref(b),
                      .a_log = A_log.data_ptr(),
                      .a_log_dtype = A_log.dtype(),
                      .dt_bias = dt_bias.data_ptr(),
                      .dt_bias_dtype = dt_bias.dtype(),
                      .beta_round = beta_round,
                      .norm_w = norm_w.data_ptr(),
                      .norm_w_dtype = norm_w.dtype(),
                      .eps = eps,
                      .scale = scale,
                      .state = state.data<float>(),
                      .out = out.data_ptr(),
                      .out_dtype = out.dtype(),
                      .start = d_start,
                      .slot = d_slot,
                      .hv = int(hv),
                      .ratio = int(hv / q.size(1)),
                      .dk = int(dk),
                      .dv = int(dv)};
  const dim3 grid{unsigned(hv), unsigned(B)};
  const char* name = "gdn_fused_recurrent_kernel";
  // The smallest instantiated state height that holds dk (zero-padded past dk); at least
  // four warps, for the staging roles.
  if (dk <= 32)
    launch_kernel(st, name, gdn_fused_recurrent_kernel<32>, grid, dim3(32 / kRowsPerWarp * kWarp),
                  0, p);
  else if (dk <= 64)
    launch_kernel(st, name, gdn_fused_recurrent_kernel<64>, grid, dim3(64 / kRowsPerWarp * kWarp),
                  0, p);
  else
    launch_kernel(st, name, gdn_fused_recurrent_kernel<128>, grid, dim3(128 / kRowsPerWarp * kWarp),
                  0, p);
}

}  // namespace vt::cuda
