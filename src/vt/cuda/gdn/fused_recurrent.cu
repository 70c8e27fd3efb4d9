// CUDA gdn_fused_recurrent (vt/cuda/gdn.h): the GDN layer between the conv and out_proj
// for the token recurrence in one kernel, the decode step's l2_normalize, gdn_gates,
// gated_delta_rule_recurrent and gated_rms_norm launches made one.
//
// The recurrent op's rows layout (gdn/delta_rows.cuh): a CTA of 4 warps per (request,
// value head, 32 value columns) with its [Dk, 32] state slice in registers, the token
// math shared with delta_rule_rows_kernel. The ceil(Dv / 32) CTAs of a head form a
// thread-block cluster, because the gated norm needs the whole head's out. Per token:
//   warp 0 l2-normalises the q head row and scales it, warp 1 the k row, warp 2 stages
//   the CTA's v columns and its lane 8 computes the gates (gdn/gates.cuh, gates_kernel's
//   code), warp 3 stages silu(z) of the CTA's columns for the norm (so no load waits
//   after the step);
//   the CTA runs the token (gdn_rows::token_step);
//   warp 0 rounds its columns of out to out's dtype and writes them into every CTA of
//   the cluster (distributed shared memory), the cluster syncs, and warp 0 of each CTA
//   applies the gated RMSNorm over the whole head to its own columns.
// The l2 and gated norms repeat row_norm_kernel's arithmetic (cuda/norm/l2_gated.cu:
// lane-strided f32 partials, warp_sum, rsqrtf, its rounding points) so that every
// value equals the unfused launches' bit for bit: q and k in f32, beta rounded to
// beta_round, o rounded to out's dtype before the norm, then R(o r), R(w n) and
// R(n silu(z)) for a narrow out. Dk <= 128 (32, 64, 128 instantiated; others padded),
// Dv <= 32 x 8 (the portable cluster size) with Dv % 4 == 0.
//
// Bytes per token and (request, head): the f32 state read and written (2 Dk Dv 4 B) plus
// the q, k, v, z rows; memory-bound like the recurrent op, ceiling the copy rate.
#include <cooperative_groups.h>

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

namespace cg = cooperative_groups;
using gdn_rows::kColLanes;
using gdn_rows::kColsPerCta;
using gdn_rows::kRowsPer;

constexpr int kMaxCluster = 8;                     // portable cluster size
constexpr int kMaxDv = kMaxCluster * kColsPerCta;  // 256

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
__global__ void __launch_bounds__(gdn_rows::kThreads, gdn_rows::kCtasPerSm)
    gdn_fused_recurrent_kernel(FusedParams p) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  static_assert(gdn_rows::kWarps >= 4, "four staging roles");
  __shared__ gdn_rows::Smem<DK> sm;
  // The head's out, rounded to out's dtype, by token parity: every CTA of the cluster
  // writes its columns here in every CTA (a CTA cannot get two tokens ahead of another:
  // the cluster barrier of each token is between).
  __shared__ float o_s[2][kMaxDv];
  __shared__ float gate_s[2];         // the token's decay exp(g) and beta
  __shared__ float w_s[kColsPerCta];  // the norm weight of the CTA's columns
  // silu(z) of the CTA's columns, by token parity: warp 3 stages token t + 1 while warp 0
  // may still read token t's (it cannot get two tokens ahead: the barriers between).
  __shared__ float silu_z_s[2][kColsPerCta];
  cg::cluster_group cluster = cg::this_cluster();
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int c0 = blockIdx.x * kColsPerCta, h = blockIdx.y, b = blockIdx.z;
  const int col = c0 + 4 * (lane % kColLanes);
  const bool active = col < p.dv;  // dv % 4 == 0: all four columns or none
  const int hk = h / p.ratio;
  float* S_g = p.state + ((int64_t(p.slot[b]) * p.hv + h) * p.dk) * p.dv;
  float4 S[kRowsPer<DK>];
  gdn_rows::load_tile<DK>(S, S_g, p.dk, p.dv, warp, lane, col, active);
  if (warp == 3)
    w_s[lane] = c0 + lane < p.dv ? load_f32(p.norm_w, p.norm_w_dtype, c0 + lane) : 0.0f;
  const int64_t t_begin = p.start[b], t_end = p.start[b + 1];
  // The cluster's CTAs share b: all take the same branches on the token count.
  if (t_begin < t_end) ptx::cluster_arrive_relaxed();  // waited before the first remote write
  for (int64_t t = t_begin; t < t_end; ++t) {
    const int par = int(t & 1);
    if (warp == 0) {
      l2_row<DK>(p.q, p.q.at(t, hk), p.dk, p.scale, sm.q, lane);
    } else if (warp == 1) {
      l2_row<DK>(p.k, p.k.at(t, hk), p.dk, 1.0f, sm.k, lane);
    } else if (warp == 2) {
      if (lane < kColLanes) {
        const int64_t v0 = p.v.at(t, h) + col;
        sm.v[lane] = active ? make_float4(load_f32(p.v.data, p.v.dtype, v0),
                                          load_f32(p.v.data, p.v.dtype, v0 + 1),
                                          load_f32(p.v.data, p.v.dtype, v0 + 2),
                                          load_f32(p.v.data, p.v.dtype, v0 + 3))
                            : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      } else if (lane == kColLanes) {
        // exp of the f32 g, as the recurrence reads gdn_gates' output.
        gate_s[0] = expf(gdn_gate::log_decay(load_f32(p.a.row(t), p.a.dtype, h),
                                             load_f32(p.a_log, p.a_log_dtype, h),
                                             load_f32(p.dt_bias, p.dt_bias_dtype, h)));
        gate_s[1] = gdn_gate::beta(load_f32(p.b.row(t), p.b.dtype, h), p.beta_round);
      }
    } else if (warp == 3) {
      // The norm's gate now, off the path after the token's step.
      silu_z_s[par][lane] =
          c0 + lane < p.dv ? siluf(load_f32(p.z.data, p.z.dtype, p.z.at(t, h) + c0 + lane)) : 0.0f;
    }
    __syncthreads();  // q, k, v, gates, silu(z) staged (and the last token's part_o read)
    const float4 o = gdn_rows::token_step<DK>(S, sm, gate_s[0], gate_s[1], warp, lane);
    // The state is final after the last token: its stores drain during the exchange.
    if (t + 1 == t_end) gdn_rows::store_tile<DK>(S, S_g, p.dk, p.dv, warp, lane, col, active);
    // Every CTA of the cluster has started (its shared memory may be written).
    if (t == t_begin) ptx::cluster_wait();
    if (warp == 0 && lane < kColLanes && active) {
      // out rounded to its dtype, as the unfused path stores o and the norm reads it back.
      const float4 r = make_float4(round_to(o.x, p.out_dtype), round_to(o.y, p.out_dtype),
                                   round_to(o.z, p.out_dtype), round_to(o.w, p.out_dtype));
      for (unsigned rank = 0; rank < cluster.num_blocks(); ++rank) {
        float* dst = cluster.map_shared_rank(&o_s[par][col], rank);
        dst[0] = r.x;
        dst[1] = r.y;
        dst[2] = r.z;
        dst[3] = r.w;
      }
    }
    cluster.sync();  // the head's out in every CTA of the cluster
    if (warp == 0) {
      // gated_rms_norm of the head (row_norm_kernel<true>'s order) on the rounded out.
      const float* oh = o_s[par];
      float ss = 0.0f;
      for (int i = lane; i < p.dv; i += kWarp) ss += oh[i] * oh[i];
      ss = warp_sum(ss);
      const float inv = rsqrtf(ss / float(p.dv) + p.eps);
      const int i = c0 + lane;
      if (i < p.dv) {
        float v = oh[i] * inv;
        if (p.out_dtype != DType::kF32)
          v = round_to(round_to(v, p.out_dtype) * w_s[lane], p.out_dtype) * silu_z_s[par][lane];
        else
          v = v * w_s[lane] * silu_z_s[par][lane];
        store_f32(p.out, p.out_dtype, (t * p.hv + h) * p.dv + i, v);
      }
    }
  }
}

}  // namespace

bool gdn_fused_recurrent_supports(int64_t dk, int64_t dv) {
  return dk >= 1 && dk <= 128 && dv >= 1 && dv <= kMaxDv && dv % 4 == 0;
}

bool gdn_fused_recurrent_selected(Stream& s, int64_t batch, int64_t hv, int64_t dk, int64_t dv) {
  if (!gdn_fused_recurrent_supports(dk, dv)) return false;
  const Toggle mode = s.kernel_config().gdn_fused;  // VTLLM_GDN_FUSED
  if (mode != Toggle::kAuto) return mode == Toggle::kOn;
  // Measured on the H200 (docs/BENCHMARKS.md, cuda_gdn_bench decode): the fused kernel
  // wins while its grid fills at most two residency waves (B 16 x Hv 32: 28.6 against
  // 30.2 us), the op sequence beyond (B 32 x Hv 32: 51.7 against 48.3 us; B 64: 96.9
  // against 83.4), where the fused CTA's serial part after the step (the exchange, the
  // norm) holds a slot the state traffic of another CTA could use.
  const int64_t ctas = batch * hv * ((dv + kColsPerCta - 1) / kColsPerCta);
  return ctas <= 2 * int64_t(gdn_rows::kCtasPerSm) * s.cuda_state().num_sms;
}

void gdn_fused_recurrent(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& z, const Rows& a, const Rows& b, const Tensor& A_log,
                         const Tensor& dt_bias, DType beta_round, float scale, const Tensor& norm_w,
                         float eps, const Varlen& req, const Tensor& state, const Tensor& out) {
  const char* op = "gdn_fused_recurrent (CUDA)";
  const int64_t B = req.batch(), hv = v.size(1), dk = q.size(2), dv = v.size(2);
  if (B == 0 || hv == 0 || dv == 0) return;
  VT_CHECK(gdn_fused_recurrent_supports(dk, dv), op, ": head dims ", dk, " x ", dv,
           ": the kernel takes Dk <= 128 and Dv <= ", kMaxDv,
           " with Dv % 4 == 0 (one cluster holds a head's columns for its norm)");
  VT_CHECK(reinterpret_cast<uintptr_t>(state.data_ptr()) % 16 == 0, op,
           ": state is not 16-byte aligned");
  VT_CHECK(B <= 65535 && hv <= 65535, op, ": grid too large");
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
  const unsigned cluster = unsigned((dv + kColsPerCta - 1) / kColsPerCta);
  const dim3 grid{cluster, unsigned(hv), unsigned(B)};
  const auto run = [&](auto kernel) {
    launch_kernel(st, "gdn_fused_recurrent_kernel", kernel,
                  LaunchShape{grid, dim3(gdn_rows::kThreads), 0, cluster}, p);
  };
  // The smallest instantiated state height that holds dk (zero-padded past dk).
  if (dk <= 32)
    run(gdn_fused_recurrent_kernel<32>);
  else if (dk <= 64)
    run(gdn_fused_recurrent_kernel<64>);
  else
    run(gdn_fused_recurrent_kernel<128>);
}

}  // namespace vt::cuda
