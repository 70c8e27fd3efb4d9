// The token recurrence of a short request inside the chunk scan (chunk_scan_tc.cu; CUDA
// sources of cuda/gdn/ only): a request under
// kMinChunkedTokens owns no chunk and runs §8.6 token by token on the CTA's
// 32-column state slice (blockIdx.x), from and back to its slot.
#pragma once

#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn/delta_rule_chunked.cuh"

namespace vt::cuda::gdn_chunk {

inline constexpr int kWarps = kThreads / kWarp;
inline constexpr int kStateRowsPerWarp = kDK / kWarps;  // state rows updated per warp

// A short request: the token recurrence of §8.6 on the slice, thread (warp, lane)
// holding state rows d0..d0+15 of column `lane` in registers; per token, k and
// scale*q staged in kq_s, the two column dot products summed over warps through red_s
// (in a fixed order).
__device__ inline void token_recurrence(const Params& p, int t0, int len, float* state_g,
                                        float* kq_s, float* red_s) {
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const int h = blockIdx.y, hk = h / p.ratio, col = blockIdx.x * kCols + lane;
  const bool active = col < p.dv;
  const int d0 = warp * kStateRowsPerWarp;
  float s[kStateRowsPerWarp];
#pragma unroll
  for (int m = 0; m < kStateRowsPerWarp; ++m)
    s[m] = active && d0 + m < p.dk ? state_g[int64_t(d0 + m) * p.dv + col] : 0.0f;
  for (int64_t t = t0; t < int64_t(t0) + len; ++t) {
    if (tid < kDK) {
      const bool live = tid < p.dk;
      kq_s[tid] = live ? load_f32(p.k, p.k_dtype, t * p.k_t + hk * p.k_h + tid) : 0.0f;
      kq_s[kDK + tid] =
          live ? load_f32(p.q, p.q_dtype, t * p.q_t + hk * p.q_h + tid) * p.scale : 0.0f;
    }
    const float decay = expf(p.g[t * p.hv + h]), bt = p.beta[t * p.hv + h];
    const float vv = active ? load_f32(p.v, p.v_dtype, t * p.v_t + int64_t(h) * p.v_h + col) : 0.0f;
    __syncthreads();  // k, q staged; the previous token's red_s is read
    float part = 0.0f;
#pragma unroll
    for (int m = 0; m < kStateRowsPerWarp; ++m) {
      s[m] *= decay;
      part += s[m] * kq_s[d0 + m];
    }
    red_s[warp * kCols + lane] = part;
    __syncthreads();
    float sk = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sk += red_s[w * kCols + lane];
    const float u = bt * (vv - sk);
    part = 0.0f;
#pragma unroll
    for (int m = 0; m < kStateRowsPerWarp; ++m) {
      s[m] += kq_s[d0 + m] * u;
      part += s[m] * kq_s[kDK + d0 + m];
    }
    __syncthreads();  // every warp has read red_s
    red_s[warp * kCols + lane] = part;
    __syncthreads();
    if (warp == 0 && active) {
      float o = 0.0f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) o += red_s[w * kCols + lane];
      store_f32(p.out, p.out_dtype, (t * p.hv + h) * p.dv + col, o);
    }
  }
  if (active) {
#pragma unroll
    for (int m = 0; m < kStateRowsPerWarp; ++m)
      if (d0 + m < p.dk) state_g[int64_t(d0 + m) * p.dv + col] = s[m];
  }
}

}  // namespace vt::cuda::gdn_chunk
