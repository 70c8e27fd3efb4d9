// The token recurrence of qwen3_5.md §8.6 on a CTA's state slice held in registers, the
// "rows" layout (CUDA sources of cuda/gdn/ only). Written once, run by the recurrent
// op's delta_rule_rows_kernel (delta_rule.cu) and the fused decode step
// (fused_recurrent.cu), so the two give the same bits.
//
// A CTA of kWarps = 4 warps owns (request, value head, kColsPerCta = 32 value columns);
// a head of Dv columns takes ceil(Dv / 32) CTAs. Small CTAs keep many of them resident
// per SM (eight of 128 threads), so one CTA's serial part of a token (staging, the
// barriers, the fused step's norm) overlaps other CTAs' state traffic, and a batch-1
// step still spreads a 32-head layer over 128 CTAs.
//
// Thread (warp w, lane l): column lane c = l % 8 owns columns 4c .. 4c + 3 (one float4),
// row group r = l / 8; it holds kRowsPer(DK) = DK / 16 state rows,
// w * 4 kRowsPer + r + 4 i for i < kRowsPer. So one warp load instruction reads four
// whole 128-byte row segments of the slice (float4 per lane), and a thread holds
// 4 kRowsPer state floats (32 registers at DK = 128). The column sums over rows (m and
// out) are per-thread partials over its rows, then summed over the four row groups by
// xor shuffles (8, then 16: the same value in every group, the adds commute), then over
// the warps through shared memory in warp order: a fixed order.
#pragma once

#include "vt/cuda/common.cuh"

namespace vt::cuda::gdn_rows {

inline constexpr int kWarps = 4;                   // warps per CTA
inline constexpr int kThreads = kWarps * kWarp;    // 128
inline constexpr int kColLanes = 8;                // lanes across a row segment
inline constexpr int kGroups = kWarp / kColLanes;  // row groups per warp
inline constexpr int kColsPerCta = 4 * kColLanes;  // value columns per CTA
inline constexpr int kCtasPerSm = 8;               // resident CTAs per SM (64 registers)

// State rows per thread for a slice of DK rows (32, 64 or 128).
template <int DK>
inline constexpr int kRowsPer = DK / (kWarps * kGroups);

template <int DK>
struct Smem {
  float k[DK], q[DK];  // the token's key and scaled query; rows past dk stay zero
  float4 v[kColLanes];  // its value columns, four per column lane
  float4 part_m[kWarps][kColLanes], part_o[kWarps][kColLanes];  // per-warp column partials
};

// Row of the slice that thread (warp, lane) holds as its i-th.
template <int DK>
__device__ __forceinline__ int tile_row(int warp, int lane, int i) {
  return warp * kGroups * kRowsPer<DK> + lane / kColLanes + kGroups * i;
}

// Thread (warp, lane)'s state tile: its rows (tile_row) of columns col .. col + 3 of the
// [dk, dv] head state at S_g (col = the CTA's first column + 4 (lane % 8); dv % 4 == 0,
// S_g 16-byte aligned). Rows past dk and inactive columns read as zero and are not
// stored.
template <int DK>
__device__ __forceinline__ void load_tile(float4 (&S)[kRowsPer<DK>], const float* S_g, int dk,
                                          int dv, int warp, int lane, int col, bool active) {
#pragma unroll
  for (int i = 0; i < kRowsPer<DK>; ++i) {
    const int row = tile_row<DK>(warp, lane, i);
    S[i] = active && row < dk ? *reinterpret_cast<const float4*>(S_g + int64_t(row) * dv + col)
                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
}

template <int DK>
__device__ __forceinline__ void store_tile(const float4 (&S)[kRowsPer<DK>], float* S_g, int dk,
                                           int dv, int warp, int lane, int col, bool active) {
  if (!active) return;
#pragma unroll
  for (int i = 0; i < kRowsPer<DK>; ++i) {
    const int row = tile_row<DK>(warp, lane, i);
    if (row < dk) *reinterpret_cast<float4*>(S_g + int64_t(row) * dv + col) = S[i];
  }
}

// x summed over the warp's row groups (lanes l, l ^ 8, l ^ 16, l ^ 24): in every lane.
__device__ __forceinline__ float4 group_sum(float4 x) {
#pragma unroll
  for (int off = kColLanes; off < kWarp; off *= 2) {
    x.x += __shfl_xor_sync(0xffffffffu, x.x, off);
    x.y += __shfl_xor_sync(0xffffffffu, x.y, off);
    x.z += __shfl_xor_sync(0xffffffffu, x.z, off);
    x.w += __shfl_xor_sync(0xffffffffu, x.w, off);
  }
  return x;
}

// part[0][c] + part[1][c] + ... in warp order.
__device__ __forceinline__ float4 warps_sum(const float4 (&part)[kWarps][kColLanes], int c) {
  float4 s = part[0][c];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) {
    const float4 x = part[w][c];
    s.x += x.x;
    s.y += x.y;
    s.z += x.z;
    s.w += x.w;
  }
  return s;
}

// One token on the tile:
//   S *= decay;  m = S^T k;  u = bt (v - m);  S += k u^T;  out = S^T q.
// On entry sm.k, sm.q (already scaled) and sm.v hold the token and the CTA has synced
// since they were written (and since warp 0 read the previous token's part_o). Returns
// out for the lane's four columns in warp 0 (every row group holds it; zeros in other
// warps). Ends with a barrier after which every thread is past its reads of sm.k, sm.q,
// sm.v and sm.part_m, so the caller may stage the next token at once; warp 0 reads
// sm.part_o after that barrier, which is safe because part_o is written again only
// after the next token's first barrier.
template <int DK>
__device__ __forceinline__ float4 token_step(float4 (&S)[kRowsPer<DK>], Smem<DK>& sm, float decay,
                                             float bt, int warp, int lane) {
  const int c = lane % kColLanes;
  float4 m = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int i = 0; i < kRowsPer<DK>; ++i) {
    const float kv = sm.k[tile_row<DK>(warp, lane, i)];
    S[i].x *= decay;
    S[i].y *= decay;
    S[i].z *= decay;
    S[i].w *= decay;
    m.x += S[i].x * kv;
    m.y += S[i].y * kv;
    m.z += S[i].z * kv;
    m.w += S[i].w * kv;
  }
  m = group_sum(m);
  if (lane < kColLanes) sm.part_m[warp][c] = m;
  __syncthreads();
  const float4 msum = warps_sum(sm.part_m, c);
  const float4 vv = sm.v[c];
  const float4 u = make_float4(bt * (vv.x - msum.x), bt * (vv.y - msum.y), bt * (vv.z - msum.z),
                               bt * (vv.w - msum.w));
  float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int i = 0; i < kRowsPer<DK>; ++i) {
    const int row = tile_row<DK>(warp, lane, i);
    const float kv = sm.k[row], qv = sm.q[row];
    S[i].x += kv * u.x;
    S[i].y += kv * u.y;
    S[i].z += kv * u.z;
    S[i].w += kv * u.w;
    o.x += S[i].x * qv;
    o.y += S[i].y * qv;
    o.z += S[i].z * qv;
    o.w += S[i].w * qv;
  }
  o = group_sum(o);
  if (lane < kColLanes) sm.part_o[warp][c] = o;
  __syncthreads();  // part_o complete; every thread is past its reads of k, q, v, part_m
  return warp == 0 ? warps_sum(sm.part_o, c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

}  // namespace vt::cuda::gdn_rows
