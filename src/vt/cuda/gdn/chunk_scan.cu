// chunk_scan (delta_rule_chunked.cuh): the state pass, one CTA of 8 warps per
// (32-column slice, value head, request), lane = value column. The [Dk, 32] f32 state
// slice lives in shared memory over the request's chunks of the pass; per chunk:
//   stage   W and q rows into m_s (one [128, Dk] tile), P, the slice of U, gam;
//   R       = [W; q] S: warp w holds W rows 8w..8w+7 and q rows 8w..8w+7 (the same
//           tokens, so the output step below is balanced), m_s read as float4
//           broadcasts, S read by lane;
//   U'      = U - R_W in place;
//   out     = scale e^gam R_q + P U' (P is zero above the diagonal: warp w stops at
//           column 8w + 8), a quarter of the chunk's k rows loading meanwhile;
//           then the decayed k rows replace W in m_s;
//   S       <- e^{gam_last} S + K_d^T U', warp w owning state rows 16w..16w+15.
// FLOPs per (chunk, head, slice): 128 x 128 x 32 x 2 + ~64 x 36 x 32 x 2 + 128 x 64 x
// 32 x 2 ~ 1.7 M; bytes staged ~ 100 KB (W, q, P, U, k), read from L2 by each of the
// Dv / 32 slices of a head. Two CTAs per SM: 104 KB of shared memory, 128 registers.
#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn/chunk_recurrence.cuh"
#include "vt/cuda/gdn/delta_rule_chunked.cuh"

namespace vt::cuda::gdn_chunk {

namespace {

constexpr int kRowsPerWarp = kChunk / kWarps;      // token rows of R and out per warp
constexpr int kKPerThread = kChunk * kDK / kThreads;
constexpr int kKPrefetch = kKPerThread / 4;
constexpr int kSmemFloats = kDK * kCols + 2 * kChunk * kDK + int(kPFloats) + kChunk * kCols + kChunk;
static_assert(kCols == kWarp, "chunk_scan: one value column per lane");
static_assert(kRowsPerWarp % 4 == 0 && kStateRowsPerWarp % 4 == 0 && kDK % 4 == 0,
              "chunk_scan: float4 tiles");

__global__ void __launch_bounds__(kThreads, 2) chunk_scan_kernel(Params p) {
  extern __shared__ float4 smem4[];
  float* s_s = reinterpret_cast<float*>(smem4);  // [kDK][kCols] state slice
  float* m_s = s_s + kDK * kCols;     // [2 kChunk][kDK]: W rows, q rows; then decayed k rows
  float* p_s = m_s + 2 * kChunk * kDK;  // [kChunk][kChunk]
  float* u_s = p_s + kPFloats;          // [kChunk][kCols] U, then U'
  float* gam_s = u_s + kChunk * kCols;  // [kChunk]
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const int h = blockIdx.y, b = blockIdx.z, hk = h / p.ratio;
  const int col = blockIdx.x * kCols + lane;
  const bool active = col < p.dv;
  float* state_g = p.state + (int64_t(p.slot[b]) * p.hv + h) * p.dk * p.dv;
  const PassRange range = pass_range(p, b);
  const int c_begin = range.begin, c_end = range.end;
  if (c_begin >= c_end) {
    const int t0 = p.start[b], len = p.start[b + 1] - t0;
    if (range.runs_recurrence(p, len)) token_recurrence(p, t0, len, state_g, m_s, p_s);
    return;
  }
  const int d0 = warp * kStateRowsPerWarp;  // this thread's state rows, column `lane`
#pragma unroll
  for (int m = 0; m < kStateRowsPerWarp; ++m) {
    const int d = d0 + m;
    s_s[d * kCols + lane] = active && d < p.dk ? state_g[int64_t(d) * p.dv + col] : 0.0f;
  }
  const int r0 = warp * kRowsPerWarp;

  for (int c = c_begin; c < c_end; ++c) {
    const int t0 = p.chunk_t0[c], n = p.chunk_len[c];
    const float* scr = chunk_scratch(p, c, h);
    const float4* w_g = reinterpret_cast<const float4*>(scr);
    for (int idx = tid; idx < int(kWFloats / 4); idx += kThreads)
      reinterpret_cast<float4*>(m_s)[idx] = w_g[idx];
    for (int idx = tid; idx < kChunk * kDK; idx += kThreads) {
      const int i = idx / kDK, d = idx % kDK;
      m_s[(kChunk + i) * kDK + d] =
          i < n && d < p.dk
              ? load_f32(p.q, p.q_dtype, (int64_t(t0) + i) * p.q_t + hk * p.q_h + d)
              : 0.0f;
    }
    const float4* p_g = reinterpret_cast<const float4*>(scr + kWFloats + kUFloats);
    for (int idx = tid; idx < int(kPFloats / 4); idx += kThreads)
      reinterpret_cast<float4*>(p_s)[idx] = p_g[idx];
    for (int i = warp; i < kChunk; i += kWarps)
      u_s[i * kCols + lane] = scr[kWFloats + int64_t(i) * kDV + blockIdx.x * kCols + lane];
    if (tid < kChunk) gam_s[tid] = scr[kWFloats + kUFloats + kPFloats + tid];
    __syncthreads();

    // R = [W; q] S for this warp's 8 W rows and 8 q rows.
    float acc_w[kRowsPerWarp] = {}, acc_q[kRowsPerWarp] = {};
#pragma unroll 1
    for (int d = 0; d < kDK; d += 4) {
      const float s0 = s_s[(d + 0) * kCols + lane], s1 = s_s[(d + 1) * kCols + lane];
      const float s2 = s_s[(d + 2) * kCols + lane], s3 = s_s[(d + 3) * kCols + lane];
#pragma unroll
      for (int a = 0; a < kRowsPerWarp; ++a) {
        const float4 w = *reinterpret_cast<const float4*>(&m_s[(r0 + a) * kDK + d]);
        const float4 q = *reinterpret_cast<const float4*>(&m_s[(kChunk + r0 + a) * kDK + d]);
        acc_w[a] = fmaf(w.w, s3, fmaf(w.z, s2, fmaf(w.y, s1, fmaf(w.x, s0, acc_w[a]))));
        acc_q[a] = fmaf(q.w, s3, fmaf(q.z, s2, fmaf(q.y, s1, fmaf(q.x, s0, acc_q[a]))));
      }
    }
#pragma unroll
    for (int a = 0; a < kRowsPerWarp; ++a) u_s[(r0 + a) * kCols + lane] -= acc_w[a];
    __syncthreads();  // U' complete; the W rows of m_s are free

    // A quarter of the chunk's k rows load into registers while the output step
    // computes (more spills at two CTAs per SM, 128 registers).
    auto load_k = [&](int idx) {
      const int j = idx / kDK, d = idx % kDK;
      return j < n && d < p.dk
                 ? load_f32(p.k, p.k_dtype, (int64_t(t0) + j) * p.k_t + hk * p.k_h + d)
                 : 0.0f;
    };
    float k_r[kKPrefetch];  // k element idx = tid + r kThreads
#pragma unroll
    for (int r = 0; r < kKPrefetch; ++r) k_r[r] = load_k(tid + r * kThreads);

    // out rows r0..r0+7: scale e^gam (q S) + P U', P zero past column r0 + 7.
    float o[kRowsPerWarp];
#pragma unroll
    for (int a = 0; a < kRowsPerWarp; ++a) o[a] = acc_q[a] * p.scale * expf(gam_s[r0 + a]);
    for (int j = 0; j < r0 + kRowsPerWarp; j += 4) {
      const float u0 = u_s[(j + 0) * kCols + lane], u1 = u_s[(j + 1) * kCols + lane];
      const float u2 = u_s[(j + 2) * kCols + lane], u3 = u_s[(j + 3) * kCols + lane];
#pragma unroll
      for (int a = 0; a < kRowsPerWarp; ++a) {
        const float4 pw = *reinterpret_cast<const float4*>(&p_s[(r0 + a) * kChunk + j]);
        o[a] = fmaf(pw.w, u3, fmaf(pw.z, u2, fmaf(pw.y, u1, fmaf(pw.x, u0, o[a]))));
      }
    }
    if (active) {
#pragma unroll
      for (int a = 0; a < kRowsPerWarp; ++a)
        if (r0 + a < n)
          store_f32(p.out, p.out_dtype, ((int64_t(t0) + r0 + a) * p.hv + h) * p.dv + col, o[a]);
    }
    const float last = gam_s[kChunk - 1];  // gam is flat past the chunk's end
    // Element idx is row idx / kDK of the [kChunk][kDK] tile, over W.
#pragma unroll
    for (int r = 0; r < kKPrefetch; ++r) {
      const int idx = tid + r * kThreads;
      m_s[idx] = k_r[r] * expf(last - gam_s[idx / kDK]);
    }
#pragma unroll 4
    for (int r = kKPrefetch; r < kKPerThread; ++r) {
      const int idx = tid + r * kThreads;
      m_s[idx] = load_k(idx) * expf(last - gam_s[idx / kDK]);
    }
    __syncthreads();  // decayed k rows staged

    // S <- e^{gam_last} S + K_d^T U' for state rows d0..d0+15 of column `lane`.
    const float decay = expf(last);
    float s_new[kStateRowsPerWarp];
#pragma unroll
    for (int m = 0; m < kStateRowsPerWarp; ++m) s_new[m] = decay * s_s[(d0 + m) * kCols + lane];
#pragma unroll 4
    for (int j = 0; j < kChunk; ++j) {
      const float uj = u_s[j * kCols + lane];
#pragma unroll
      for (int m = 0; m < kStateRowsPerWarp; m += 4) {
        const float4 kd = *reinterpret_cast<const float4*>(&m_s[j * kDK + d0 + m]);
        s_new[m + 0] += kd.x * uj;
        s_new[m + 1] += kd.y * uj;
        s_new[m + 2] += kd.z * uj;
        s_new[m + 3] += kd.w * uj;
      }
    }
#pragma unroll
    for (int m = 0; m < kStateRowsPerWarp; ++m) s_s[(d0 + m) * kCols + lane] = s_new[m];
    __syncthreads();  // the next chunk restages m_s, p_s, u_s and reads all of s_s
  }
  if (active) {
#pragma unroll
    for (int m = 0; m < kStateRowsPerWarp; ++m)
      if (d0 + m < p.dk) state_g[int64_t(d0 + m) * p.dv + col] = s_s[(d0 + m) * kCols + lane];
  }
}

}  // namespace

void launch_chunk_scan(const Params& p, cudaStream_t stream) {
  constexpr int smem = kSmemFloats * int(sizeof(float));
  VT_CUDA_CHECK(
      cudaFuncSetAttribute(chunk_scan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(unsigned((p.dv + kCols - 1) / kCols), unsigned(p.hv), unsigned(p.batch));
  chunk_scan_kernel<<<grid, kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("chunk_scan_kernel");
}

}  // namespace vt::cuda::gdn_chunk
