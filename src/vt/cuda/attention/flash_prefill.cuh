// The tensor-core paged attention kernel for prefill (CUDA sources only): a
// FlashAttention-2 style loop on mma.sync m16n8k16 (bf16 or f16 in, f32 accumulate),
// templated on head_dim D and the 16-bit element type T (q, caches and out all T).
//
// Work: a CTA (kWarps warps) takes one tile of kRows query rows of one request and one
// kv head g (rows token-major over the query heads of g, as paged_attention.cuh: each
// K/V tile in shared memory serves every query head of the group) and one split z of
// the keys. Warp w owns rows 16w .. 16w + 15 (one mma M).
// Shared memory (swizzled, kv_tiles.cuh: 16-byte chunk c of row r stored at chunk
// c ^ (r & 7), so the eight rows an ldmatrix reads fall in distinct banks):
//   q_tile  [kRows][D]            the tile's query rows (zeros for unused rows)
//   k_tile  [2][kKeys][D]         two stages: tile i + 1 is copied (cp.async, through
//   v_tile  [2][kKeys][D]         the block table, kv_tiles.cuh) while tile i is computed
// Per key tile, per warp:
//   S = Q K^T   ldmatrix Q (A) and K (B, non-transposed), f32 accumulators;
//   softmax     scaled into base 2, causal mask only on tiles that cross the first
//               row's limit; running max m and per-thread partial sums l (f32, of the
//               unrounded p), the accumulator rescaled by exp2(m_old - m_new);
//   O += P V    P rounded to T straight from the S accumulators (the A-fragment layout
//               of m16n8k16 equals two adjacent C fragments), V through ldmatrix.trans.
// With one split the CTA writes out = O / l rounded once; with several it writes O, m
// and l to the f32 workspace of paged_attention.cu's combine_kernel (m in the same
// base-2 scaled units as the CUDA-core kernel's). The PTX wrappers live in
// vt/cuda/ptx.cuh.
// Padded (launch<D, T, true>): rows hold p.head_dim elements, a multiple of 8 up to D
// (16-byte chunks whole); the tiles' chunks past it are zero-filled on load, the k-steps
// (16 dims) wholly past it are skipped, and dims past it are never written. Without
// Padded, head_dim is D and the code is the unpadded kernel's.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "vt/cuda/attention/kv_tiles.cuh"
#include "vt/cuda/attention/paged_attention.cuh"
#include "vt/cuda/ptx.cuh"

namespace vt::cuda::flash {

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * kWarp;
inline constexpr int kRows = kWarps * 16;  // query rows per CTA
inline constexpr int kSplitAlign = 64;     // a split's key count is a multiple of this

// Keys per shared-memory tile: head_dim 256 takes 32 so two CTAs fit on an SM.
template <int D>
constexpr int tile_keys() {
  return D >= 256 ? 32 : 64;
}

template <int D>
constexpr int smem_bytes() {
  return (kRows + 4 * tile_keys<D>()) * D * 2;
}

// Runs flash_prefill_kernel<D, T, Padded> over num_tiles tiles (instantiated per D in
// flash_prefill_d*.cu).
template <int D, class T, bool Padded>
void launch(const paged::Params& p, int num_tiles, cudaStream_t stream);

namespace detail {

// The PTX this kernel and paged_decode.cuh are written with (both `using namespace` this).
using kv_tiles::swz;
using ptx::cp_async16;
using ptx::cp_async_commit;
using ptx::cp_async_wait;
using ptx::ldmatrix_x4;
using ptx::ldmatrix_x4_trans;
using ptx::mma_m16n8k16;
using ptx::smem_addr;

// Two floats rounded to nearest even, lo in the low half (the lower column).
__device__ __forceinline__ uint32_t pack2(float lo, float hi, __nv_bfloat16) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t pack2(float lo, float hi, __half) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

}  // namespace detail

template <int D, class T, bool Padded>
__global__ void __launch_bounds__(kThreads) flash_prefill_kernel(paged::Params p) {
  using namespace detail;
  const int dim = Padded ? p.head_dim : D;  // elements per row
  constexpr int kKeys = tile_keys<D>();
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  static_assert(D % 16 == 0 && kChunks >= 8 && kKeys % 16 == 0, "tile shape");
  extern __shared__ __align__(128) unsigned char smem[];
  T* q_tile = reinterpret_cast<T*>(smem);
  T* k_tile = q_tile + kRows * D;
  T* v_tile = k_tile + 2 * kKeys * D;

  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int quad_row = lane / 4, quad_col = 2 * (lane % 4);  // C-fragment coordinates
  // Tiles run last first: a request's later tokens see the most keys, so the longest
  // CTAs start first and the short ones fill the tail.
  const int tile = gridDim.x - 1 - blockIdx.x, split = blockIdx.z;
  const int g = blockIdx.y / p.head_chunks, head0 = (blockIdx.y % p.head_chunks) * p.heads_per_cta;
  const int b = p.tiles[3 * tile], t0 = p.tiles[3 * tile + 1], nt = p.tiles[3 * tile + 2];
  if (nt <= 0) return;  // an empty tile of a launch shaped by bounds (device indices)
  const int q_begin = p.query_start[b], q_len = p.query_start[b + 1] - q_begin;
  const int ctx = p.seq_lens[b] - q_len;
  const int rows_used = (kRows / p.heads_per_cta) * p.heads_per_cta;
  const T* q = static_cast<const T*>(p.q);

  // Row r of the tile: token t0 + r / heads_per_cta, query head g * group + head0 +
  // r % heads_per_cta; head -1 marks an unused row.
  auto row_head = [&](int r) {
    const int dt = r / p.heads_per_cta, hh = head0 + r % p.heads_per_cta;
    return r < rows_used && dt < nt && hh < p.group ? g * p.group + hh : -1;
  };

  for (int c = threadIdx.x; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8, h = row_head(r);
    const bool live = h >= 0 && (!Padded || col < dim);
    const T* src =
        !live ? q : q + int64_t(t0 + r / p.heads_per_cta) * p.q_t + int64_t(h) * p.q_h + col;
    cp_async16(smem_addr(q_tile + swz<D>(r, col)), src, live);
  }

  // This thread's two rows (C-fragment rows quad_row and quad_row + 8 of its warp).
  int row_t[2], row_h[2], row_keys[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = warp * 16 + quad_row + 8 * i;
    row_h[i] = row_head(r);
    row_t[i] = t0 + r / p.heads_per_cta;
    row_keys[i] = row_h[i] < 0 ? 0 : ctx + (row_t[i] - q_begin) + 1;
  }
  // A warp whose 16 rows are all unused (short requests) only helps with the copies.
  const bool warp_live = __any_sync(0xffffffffu, row_h[0] >= 0 || row_h[1] >= 0);
  // Keys of this split; every used row sees the first token's keys, so only tiles
  // reaching past them are masked.
  const int tile_key_end = ctx + (t0 + nt - 1 - q_begin) + 1;
  const int k_begin = split * p.split_keys;
  const int k_end = min(tile_key_end, k_begin + p.split_keys);
  const int unmasked_end = min(ctx + (t0 - q_begin) + 1, k_end);
  const int limit[2] = {min(row_keys[0], k_end), min(row_keys[1], k_end)};

  const kv_tiles::PagedKvTiles<D, kKeys, kThreads, T, Padded> kv(p, b, g, k_end);
  auto load_kv = [&](int kt, int stage) {
    kv.load(kt, k_tile + stage * kKeys * D, v_tile + stage * kKeys * D);
  };

  float acc[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  // Up to head_dim 128 the warp's query fragments stay in registers after the first
  // tile; at 256 they would not fit beside the accumulators and are re-read per tile.
  constexpr bool kQInRegisters = D <= 128;
  uint32_t q_frag[kQInRegisters ? D / 16 : 1][4] = {};

  const int n_tiles = k_end > k_begin ? (k_end - k_begin + kKeys - 1) / kKeys : 0;
  if (n_tiles > 0) load_kv(k_begin, 0);
  cp_async_commit();  // the query rows and the first key tile
  for (int it = 0; it < n_tiles; ++it) {
    const int kt = k_begin + it * kKeys, stage = it & 1;
    if (it + 1 < n_tiles) {
      load_kv(kt + kKeys, stage ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // tile it (and the query rows) visible to every warp
    if (warp_live) {
      // S = Q K^T for the warp's 16 rows and the tile's keys.
      const T* ks = k_tile + stage * kKeys * D;
      float s[kKeys / 8][4];
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        if (Padded && kk * 16 >= dim) break;  // zeros from here on
        uint32_t a[4];
        if (!kQInRegisters || it == 0)
          ldmatrix_x4(a,
                      smem_addr(q_tile + swz<D>(warp * 16 + lane % 16, kk * 16 + 8 * (lane / 16))));
        if constexpr (kQInRegisters) {
          if (it == 0) {
            for (int r = 0; r < 4; ++r) q_frag[kk][r] = a[r];
          } else {
            for (int r = 0; r < 4; ++r) a[r] = q_frag[kk][r];
          }
        }
#pragma unroll
        for (int n2 = 0; n2 < kKeys / 16; ++n2) {
          uint32_t bk[4];
          ldmatrix_x4(bk, smem_addr(ks + swz<D>(n2 * 16 + lane % 8 + 8 * (lane / 16),
                                                kk * 16 + 8 * ((lane / 8) % 2))));
          mma_m16n8k16(s[2 * n2], a, bk[0], bk[1], T());
          mma_m16n8k16(s[2 * n2 + 1], a, bk[2], bk[3], T());
        }
      }

      // Online softmax in base 2; s becomes p.
      const bool masked = kt + kKeys > unmasked_end;
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float mx = m[i];
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float x = s[n][2 * i + e] * p.scale_log2;
            if (masked && kt + n * 8 + quad_col + e >= limit[i]) x = -INFINITY;
            s[n][2 * i + e] = x;
            mx = fmaxf(mx, x);
          }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // A row with no visible key yet keeps m = -inf and contributes nothing.
        const float corr = mx == -INFINITY ? 1.0f : exp2f(m[i] - mx);
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float pr = mx == -INFINITY ? 0.0f : exp2f(s[n][2 * i + e] - mx);
            sum += pr;
            s[n][2 * i + e] = pr;
          }
        l[i] = l[i] * corr + sum;  // this thread's keys only; the quad is summed at the end
        m[i] = mx;
        // Once the maxima settle most tiles leave corr = 1: skip the multiplies then.
        if (__any_sync(0xffffffffu, corr != 1.0f)) {
#pragma unroll
          for (int n = 0; n < D / 8; ++n) {
            acc[n][2 * i] *= corr;
            acc[n][2 * i + 1] *= corr;
          }
        }
      }

      // O += P V: P (rounded to T: vt/ops/attention.h) as A, V as B via ldmatrix.trans.
      const T* vs = v_tile + stage * kKeys * D;
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {
        const uint32_t a[4] = {pack2(s[2 * kk][0], s[2 * kk][1], T()),
                               pack2(s[2 * kk][2], s[2 * kk][3], T()),
                               pack2(s[2 * kk + 1][0], s[2 * kk + 1][1], T()),
                               pack2(s[2 * kk + 1][2], s[2 * kk + 1][3], T())};
#pragma unroll
        for (int n2 = 0; n2 < D / 16; ++n2) {
          if (Padded && n2 * 16 >= dim) break;  // V is zero from here on
          uint32_t bv[4];
          ldmatrix_x4_trans(bv, smem_addr(vs + swz<D>(kk * 16 + lane % 8 + 8 * ((lane / 8) % 2),
                                                      n2 * 16 + 8 * (lane / 16))));
          mma_m16n8k16(acc[2 * n2], a, bv[0], bv[1], T());
          mma_m16n8k16(acc[2 * n2 + 1], a, bv[2], bv[3], T());
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
  cp_async_wait<0>();  // nothing in flight at exit (a split with no keys)

#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if (row_h[i] < 0) continue;
    if (p.splits == 1) {
      const float inv = 1.0f / l[i];
      T* o = static_cast<T*>(p.out) + int64_t(row_t[i]) * p.out_t + int64_t(row_h[i]) * p.out_h;
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
        if (!Padded || n * 8 < dim)
          *reinterpret_cast<uint32_t*>(o + n * 8 + quad_col) =
              pack2(acc[n][2 * i] * inv, acc[n][2 * i + 1] * inv, T());
    } else {
      const int64_t row = int64_t(split) * p.tokens * p.hq + int64_t(row_t[i]) * p.hq + row_h[i];
      float* wa = p.ws_acc + row * dim;
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
        if (!Padded || n * 8 < dim)
          *reinterpret_cast<float2*>(wa + n * 8 + quad_col) =
              make_float2(acc[n][2 * i], acc[n][2 * i + 1]);
      if (lane % 4 == 0) {
        p.ws_ml[row * 2] = m[i];
        p.ws_ml[row * 2 + 1] = l[i];
      }
    }
  }
}

}  // namespace vt::cuda::flash
