// The paged attention kernel (CUDA sources only): a tiled flash-attention on CUDA
// cores with an online softmax, templated on head_dim D and the cache storage type.
//
// Work: a CTA takes one tile (request b, up to kRows query rows = tokens x query
// heads of one kv head g) and one split z of the keys. Rows are ordered token-major:
// row r is token t0 + r / heads_per_cta, head g * group + head0 + r % heads_per_cta,
// so the query heads sharing a kv head read each K/V tile from shared memory once.
// Per key tile (kKeys = 32 keys, K and V staged in shared memory, 16-byte global
// loads, the K rows padded by one word so lane j reading key j is bank-conflict
// free):
//   scores  lane j computes q_r . k_j for the warp's kRowsPerWarp rows (q rows
//           pre-scaled by scale * log2(e), kept in shared memory as f32);
//   softmax running max m and sum l per row (exp2), the accumulator rescaled when
//           the max grows; keys past the row's causal limit score -inf;
//   P . V   lane owns dims lane + 32 i; p_j broadcast by shuffle.
// With one split the CTA writes out = acc / l; with several it writes acc, m and l
// to an f32 workspace and combine_kernel (paged_attention.cu) merges the splits.
// Padded (any head_dim <= D, e.g. 36 in a D = 64 instantiation): the rows hold
// p.head_dim elements, staged element by element (no 16-byte alignment to rely on) with
// zeros past head_dim, which add nothing to the scores or P.V; dims past it are not
// written. Without Padded, head_dim is D and the loads are 16-byte.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "vt/cuda/common.cuh"

namespace vt::cuda::paged {

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * kWarp;
inline constexpr int kRowsPerWarp = 4;
inline constexpr int kRows = kWarps * kRowsPerWarp;  // query rows per CTA
inline constexpr int kKeys = 32;                     // keys per shared-memory tile

struct Params {
  const void* q;  // [T, Hq, D], element strides q_t, q_h
  DType q_dtype;
  int64_t q_t, q_h;
  const void* k_cache;  // [blocks, block_size, Hkv, D]
  const void* v_cache;
  void* out;  // [T, Hq, D]
  DType out_dtype;
  int64_t out_t, out_h;
  float* ws_acc;  // [splits, T, Hq, D] (splits > 1)
  float* ws_ml;   // [splits, T, Hq, 2]
  const int32_t* tiles;        // [num_tiles, 3]: request, first token, tokens
  const int32_t* query_start;  // [B + 1]
  const int32_t* seq_lens;     // [B]
  const int32_t* block_table;  // [B, max_blocks]
  int max_blocks, block_size;
  int tokens, hq, hkv, group;
  int heads_per_cta, head_chunks;  // query heads of one kv head per CTA, CTAs per kv head
  // Keys per split (a multiple of kKeys). The decode kernel reads neither as fixed:
  // splits bounds the grid and each request sizes its own (decode::request_split).
  int splits, split_keys;
  float scale_log2;  // scale * log2(e)
  // Elements per row of q, the caches, out and the workspace: the kernels' D, or at most
  // D in their padded instantiations (launch<D, T, true>).
  int head_dim;
};

// Shared memory of one CTA, in bytes.
template <int D, class T>
constexpr int smem_bytes() {
  return kRows * D * 4 + kKeys * (D * int(sizeof(T)) + 4) + kKeys * D * int(sizeof(T));
}

// Elements e, e + 1 of a shared-memory K row (e even) as floats: one 32-bit load for
// 16-bit types; two for f32, whose padded rows are only 4-byte aligned.
__device__ __forceinline__ float2 load_pair(const __nv_bfloat16* p) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}
__device__ __forceinline__ float2 load_pair(const __half* p) {
  return __half22float2(*reinterpret_cast<const __half2*>(p));
}
__device__ __forceinline__ float2 load_pair(const float* p) { return make_float2(p[0], p[1]); }

template <int D, class T, bool Padded>
__global__ void __launch_bounds__(kThreads) attention_kernel(Params p) {
  static_assert(D % kWarp == 0 && (Padded || (D * sizeof(T)) % 16 == 0), "head_dim");
  const int dim = Padded ? p.head_dim : D;  // elements per row
  constexpr int kPerLane = D / kWarp;
  constexpr int kRowWords = D * int(sizeof(T)) / 4 + 1;  // K row in 32-bit words, padded
  constexpr int kChunks = D * int(sizeof(T)) / 16;       // 16-byte chunks per key row
  extern __shared__ __align__(16) unsigned char smem[];
  float* q_s = reinterpret_cast<float*>(smem);                              // [kRows][D]
  uint32_t* k_s = reinterpret_cast<uint32_t*>(smem + kRows * D * 4);        // [kKeys][kRowWords]
  T* v_s = reinterpret_cast<T*>(smem + kRows * D * 4 + kKeys * kRowWords * 4);  // [kKeys][D]

  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int tile = blockIdx.x, split = blockIdx.z;
  const int g = blockIdx.y / p.head_chunks, head0 = (blockIdx.y % p.head_chunks) * p.heads_per_cta;
  const int b = p.tiles[3 * tile], t0 = p.tiles[3 * tile + 1], nt = p.tiles[3 * tile + 2];
  if (nt <= 0) return;  // an empty tile of a launch shaped by bounds (device indices)
  const int q_begin = p.query_start[b], q_len = p.query_start[b + 1] - q_begin;
  const int ctx = p.seq_lens[b] - q_len;  // keys before the request's first query token

  // This CTA's rows: token, head and causal key count; -1 head marks an unused row.
  int row_t[kRowsPerWarp], row_h[kRowsPerWarp], row_keys[kRowsPerWarp];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = warp * kRowsPerWarp + i;
    const int dt = r / p.heads_per_cta, hh = head0 + r % p.heads_per_cta;
    const bool valid = dt < nt && r < (kRows / p.heads_per_cta) * p.heads_per_cta && hh < p.group;
    row_t[i] = t0 + dt;
    row_h[i] = valid ? g * p.group + hh : -1;
    row_keys[i] = valid ? ctx + (t0 + dt - q_begin) + 1 : 0;
  }
  // Stage the scaled query rows (zeros for unused rows).
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    float* dst = q_s + (warp * kRowsPerWarp + i) * D;
    for (int e = lane; e < D; e += kWarp)
      dst[e] = row_h[i] < 0 || (Padded && e >= dim)
                   ? 0.0f
                   : load_f32(p.q, p.q_dtype,
                              int64_t(row_t[i]) * p.q_t + int64_t(row_h[i]) * p.q_h + e) *
                         p.scale_log2;
  }
  // Keys this CTA visits: its split of [0, keys of the tile's last token).
  const int tile_keys = ctx + (t0 + nt - 1 - q_begin) + 1;
  const int k_begin = split * p.split_keys;
  const int k_end = min(tile_keys, k_begin + p.split_keys);

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kPerLane];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) acc[i][e] = 0.0f;
  }
  const int64_t cache_row = int64_t(p.hkv) * dim;  // elements per slot
  const T* kc = static_cast<const T*>(p.k_cache);
  const T* vc = static_cast<const T*>(p.v_cache);

  for (int kt = k_begin; kt < k_end; kt += kKeys) {
    __syncthreads();  // the previous tile is consumed (and q_s is written, first time)
    if constexpr (Padded) {
      for (int c = threadIdx.x; c < kKeys * D; c += kThreads) {
        const int j = c / D, e = c % D, key = kt + j;
        T kv = from_float<T>(0.0f), vv = kv;
        if (key < k_end && e < dim) {
          const int64_t slot =
              int64_t(p.block_table[int64_t(b) * p.max_blocks + key / p.block_size]) *
                  p.block_size +
              key % p.block_size;
          const int64_t off = slot * cache_row + int64_t(g) * dim + e;
          kv = kc[off];
          vv = vc[off];
        }
        reinterpret_cast<T*>(k_s + j * kRowWords)[e] = kv;
        v_s[j * D + e] = vv;
      }
    }
    for (int c = threadIdx.x; !Padded && c < kKeys * kChunks; c += kThreads) {
      const int j = c / kChunks, chunk = c % kChunks, key = kt + j;
      uint4 kv4 = make_uint4(0, 0, 0, 0), vv4 = make_uint4(0, 0, 0, 0);
      if (key < k_end) {
        const int64_t slot =
            int64_t(p.block_table[int64_t(b) * p.max_blocks + key / p.block_size]) * p.block_size +
            key % p.block_size;
        const int64_t off = slot * cache_row + int64_t(g) * D;
        kv4 = reinterpret_cast<const uint4*>(kc + off)[chunk];
        vv4 = reinterpret_cast<const uint4*>(vc + off)[chunk];
      }
      uint32_t* kd = k_s + j * kRowWords + chunk * 4;
      kd[0] = kv4.x;
      kd[1] = kv4.y;
      kd[2] = kv4.z;
      kd[3] = kv4.w;
      reinterpret_cast<uint4*>(v_s + j * D)[chunk] = vv4;
    }
    __syncthreads();

    // Scores of key kt + lane against the warp's rows.
    float sc[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) sc[i] = 0.0f;
    const T* krow = reinterpret_cast<const T*>(k_s + lane * kRowWords);
    const float* qw = q_s + warp * kRowsPerWarp * D;
#pragma unroll 4
    for (int e = 0; e < D; e += 2) {  // two dims per step: one K load, float2 q broadcasts
      const float2 kv = load_pair(krow + e);
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        const float2 qv = *reinterpret_cast<const float2*>(qw + i * D + e);
        sc[i] += qv.x * kv.x;
        sc[i] += qv.y * kv.y;
      }
    }
    const int key = kt + lane;
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const float s = key < min(row_keys[i], k_end) ? sc[i] : -INFINITY;
      const float m_new = fmaxf(m[i], warp_max(s));
      // A row with no visible key yet keeps m = -inf and contributes nothing.
      const float pr = m_new == -INFINITY ? 0.0f : exp2f(s - m_new);
      const float corr = m_new == -INFINITY ? 1.0f : exp2f(m[i] - m_new);
      l[i] = l[i] * corr + warp_sum(pr);
      m[i] = m_new;
      // Narrow out: the weight rounds before P.V, the sum l stays unrounded (vt/ops/attention.h).
      sc[i] = round_to(pr, p.out_dtype);
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) acc[i][e] *= corr;
    }
    const int n = min(kKeys, k_end - kt);
    for (int j = 0; j < n; ++j) {
      float pj[kRowsPerWarp];
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) pj[i] = __shfl_sync(0xffffffffu, sc[i], j);
      const T* vrow = v_s + j * D;
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) {
        const float vv = to_float(vrow[lane + e * kWarp]);
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; ++i) acc[i][e] += pj[i] * vv;
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    if (row_h[i] < 0) continue;
    const int64_t th = int64_t(row_t[i]) * p.hq + row_h[i];
    if (p.splits == 1) {
      const float inv = 1.0f / l[i];
      const int64_t off = int64_t(row_t[i]) * p.out_t + int64_t(row_h[i]) * p.out_h;
#pragma unroll
      for (int e = 0; e < kPerLane; ++e)
        if (!Padded || lane + e * kWarp < dim)
          store_f32(p.out, p.out_dtype, off + lane + e * kWarp, acc[i][e] * inv);
    } else {
      float* wa = p.ws_acc + (int64_t(split) * p.tokens * p.hq + th) * dim;
#pragma unroll
      for (int e = 0; e < kPerLane; ++e)
        if (!Padded || lane + e * kWarp < dim) wa[lane + e * kWarp] = acc[i][e];
      if (lane == 0) {
        float* ml = p.ws_ml + (int64_t(split) * p.tokens * p.hq + th) * 2;
        ml[0] = m[i];
        ml[1] = l[i];
      }
    }
  }
}

// Runs attention_kernel<D, T, Padded> over num_tiles tiles (instantiated per D in
// paged_attention_d*.cu).
template <int D, class T, bool Padded>
void launch(const Params& p, int num_tiles, cudaStream_t stream);

}  // namespace vt::cuda::paged
