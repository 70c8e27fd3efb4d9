// The token recurrence of qwen3_5.md §8.6 on a CTA's state slice held in registers, the
// "rows" layout (CUDA sources of cuda/gdn/ only). Written once, run by the recurrent
// op's delta_rule_rows_kernel (delta_rule.cu) and the fused decode step
// (fused_recurrent.cu), so the two give the same bits.
//
// A CTA of DK / kRowsPerWarp warps owns (request, value head, kColsPerCta value
// columns). Lane l owns columns 4l .. 4l + 3 (one float4), warp w state rows 8w .. 8w + 7:
// a warp's loads are whole 512-byte state rows (float4 per lane, 8 in flight per
// thread, the CTA's 64 KB slice contiguous), and a thread holds 32 state floats (64
// registers). The column sums over rows (m and out) are per-thread partials over its 8
// rows, then summed over the warps through shared memory in a fixed order.
#pragma once

#include "vt/cuda/common.cuh"

namespace vt::cuda::gdn_rows {

inline constexpr int kRowsPerWarp = 8;         // state rows per warp
inline constexpr int kColsPerCta = 4 * kWarp;  // value columns per CTA

template <int DK>
struct Smem {
  static constexpr int kWarps = DK / kRowsPerWarp;
  float k[DK], q[DK];  // the token's key and scaled query; rows past dk stay zero
  float4 v[kWarp];     // its value columns, four per lane
  float4 part_m[kWarps][kWarp], part_o[kWarps][kWarp];  // per-warp column partials
};

// Thread (warp, lane)'s state tile: rows row0 .. row0 + 7 of columns col .. col + 3 of the
// [dk, dv] head state at S_g (col = 4 lane + the CTA's first column; dv % 4 == 0, S_g
// 16-byte aligned). Rows past dk and inactive columns read as zero and are not stored.
__device__ __forceinline__ void load_tile(float4 (&S)[kRowsPerWarp], const float* S_g, int dk,
                                          int dv, int row0, int col, bool active) {
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i)
    S[i] = active && row0 + i < dk
               ? *reinterpret_cast<const float4*>(S_g + int64_t(row0 + i) * dv + col)
               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

__device__ __forceinline__ void store_tile(const float4 (&S)[kRowsPerWarp], float* S_g, int dk,
                                           int dv, int row0, int col, bool active) {
  if (!active) return;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i)
    if (row0 + i < dk) *reinterpret_cast<float4*>(S_g + int64_t(row0 + i) * dv + col) = S[i];
}

// One token on the tile:
//   S *= decay;  m = S^T k;  u = bt (v - m);  S += k u^T;  out = S^T q.
// On entry sm.k, sm.q (already scaled) and sm.v hold the token and the CTA has synced
// since they were written (and since warp 0 read the previous token's part_o). Returns
// out for the lane's four columns in warp 0 (zeros elsewhere). Ends with a barrier after
// which every thread is past its reads of sm.k, sm.q, sm.v and sm.part_m, so the caller
// may stage the next token at once; warp 0 reads sm.part_o after that barrier, which is
// safe because part_o is written again only after the next token's first barrier.
template <int DK>
__device__ __forceinline__ float4 token_step(float4 (&S)[kRowsPerWarp], Smem<DK>& sm, float decay,
                                             float bt, int warp, int lane) {
  constexpr int kWarps = Smem<DK>::kWarps;
  const int row0 = warp * kRowsPerWarp;
  float4 m = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const float kv = sm.k[row0 + i];
    S[i].x *= decay;
    S[i].y *= decay;
    S[i].z *= decay;
    S[i].w *= decay;
    m.x += S[i].x * kv;
    m.y += S[i].y * kv;
    m.z += S[i].z * kv;
    m.w += S[i].w * kv;
  }
  sm.part_m[warp][lane] = m;
  __syncthreads();
  float4 msum = sm.part_m[0][lane];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) {
    const float4 x = sm.part_m[w][lane];
    msum.x += x.x;
    msum.y += x.y;
    msum.z += x.z;
    msum.w += x.w;
  }
  const float4 vv = sm.v[lane];
  const float4 u = make_float4(bt * (vv.x - msum.x), bt * (vv.y - msum.y), bt * (vv.z - msum.z),
                               bt * (vv.w - msum.w));
  float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const float kv = sm.k[row0 + i], qv = sm.q[row0 + i];
    S[i].x += kv * u.x;
    S[i].y += kv * u.y;
    S[i].z += kv * u.z;
    S[i].w += kv * u.w;
    o.x += S[i].x * qv;
    o.y += S[i].y * qv;
    o.z += S[i].z * qv;
    o.w += S[i].w * qv;
  }
  sm.part_o[warp][lane] = o;
  __syncthreads();  // part_o complete; every thread is past its reads of k, q, v, part_m
  float4 osum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (warp == 0) {
    osum = sm.part_o[0][lane];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) {
      const float4 x = sm.part_o[w][lane];
      osum.x += x.x;
      osum.y += x.y;
      osum.z += x.z;
      osum.w += x.w;
    }
  }
  return osum;
}

}  // namespace vt::cuda::gdn_rows
