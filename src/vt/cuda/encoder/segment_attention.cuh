// The tensor-core kernel of segment_attention (vt/ops/encoder.h; CUDA sources of this
// folder only): non-causal FlashAttention-2 style attention on mma.sync m16n8k16 (bf16 or
// f16 in, f32 accumulate) over a packed token axis cut into segments, templated on the
// padded head dim Dp (head_dim rounded up to a multiple of 16; the pad is zeros in
// shared memory, so it adds nothing to Q K^T and its P V columns are not stored), the
// query m-tiles per warp MT and the element type T (q, k, v all T).
//
// Work: a CTA of kWarps warps takes one tile of the host-built tile table (rows
// q0 .. q0 + nq - 1 of one segment, whose keys are [k_begin, k_end)) for one head
// (blockIdx.x: heads vary fastest, so the table's order, longest segments first, is the
// order CTAs start). Warp w owns query rows [16 MT w, 16 MT (w + 1)): MT m-tiles share
// every K and V fragment a warp reads from shared memory (MT = 2 halves the ldmatrix
// traffic per mma, which otherwise bounds the loop).
// Shared memory, rows padded to Dp + 8 elements (a row pitch of an odd number of 16-byte
// chunks: the eight rows an ldmatrix reads fall in distinct banks, for every Dp):
//   q_tile [kRows][Dp + 8]      the tile's query rows (zeros past nq and head_dim)
//   k_tile [2][kKeys][Dp + 8]   two stages: tile i + 1 is copied while tile i is computed
//   v_tile [2][kKeys][Dp + 8]   (cp.async when rows allow 16-byte copies, else plain loads)
// Per key tile, per warp: S = Q K^T (Q fragments held in registers, K by ldmatrix);
// online softmax in base 2 (scale folded into log2 e), the last tile of a segment masked
// past k_end, running max m and per-thread partial sums l of the unrounded p in f32, the
// accumulator rescaled by exp2(m_old - m_new); O += P V with P rounded to T straight from
// the S accumulators (the A-fragment layout of m16n8k16 equals two adjacent C fragments),
// V through ldmatrix.trans. The CTA writes out = O / l rounded once.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/ptx.cuh"

namespace vt::cuda::segattn {

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * kWarp;
inline constexpr int kKeys = 64;  // keys per shared-memory tile

// One entry of the tile table: query rows [q0, q0 + nq) attending to keys
// [k_begin, k_end) (their segment), all token indices into the packed axis.
struct Tile {
  int32_t q0, nq, k_begin, k_end;
};

// What every kernel of segment_attention reads; strides in elements.
struct Params {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  int64_t q_t, q_h, k_t, k_h, v_t, v_h, o_t, o_h;
  DType q_dtype, k_dtype, v_dtype, out_dtype;
  const Tile* tiles;  // on the device
  int head_dim;
  float scale_log2;  // scale * log2(e)
  bool vec_in;       // q, k, v rows may be copied in 16-byte pieces
  bool out_pairs;    // out is T, head_dim even and rows 4-byte aligned: paired stores
};

// Query m-tiles per warp: two while the accumulators, S and the Q fragments of both fit
// the register file (Dp <= 80), one above.
template <int Dp>
constexpr int m_tiles() {
  return Dp <= 80 ? 2 : 1;
}
template <int Dp>
constexpr int tile_rows() {  // query rows per CTA
  return kWarps * 16 * m_tiles<Dp>();
}
template <int Dp>
constexpr int smem_bytes() {
  return (tile_rows<Dp>() + 4 * kKeys) * (Dp + 8) * 2;
}

// Launches the kernel over `num_tiles` tiles (p.tiles, at most tile_rows<Dp>() rows
// each) and `heads` heads on `stream`.
template <int Dp, class T>
void launch(const Params& p, int num_tiles, int heads, cudaStream_t stream);

// The CUDA-core kernel (segment_attention_cuda_cores.cu): any dtypes of q, k, v and out
// (each read through its own), head_dim up to kCudaCoreMaxDim, tiles of at most
// kCudaCoreRows rows. P is rounded to v's dtype before P V when that is narrow.
inline constexpr int kCudaCoreRows = 16;
inline constexpr int kCudaCoreMaxDim = 256;
void launch_cuda_cores(const Params& p, int num_tiles, int heads, cudaStream_t stream);

// The wgmma kernel (segment_attention_wgmma.cu, sm_90a): q, k, v all bf16 (bf16) or all
// f16, head_dim for which wgmma_supports is true on the device's compute capability cc
// (StreamState::cc), p.vec_in; tiles of at most kWgmmaRows rows. The mma.sync kernel's
// numerics (P rounded to T, f32 accumulation) up to the exponent's rounding.
inline constexpr int kWgmmaRows = 256;
bool wgmma_supports(int head_dim, int cc);
void launch_wgmma(const Params& p, bool bf16, int num_tiles, int heads, cudaStream_t stream);

namespace detail {

__device__ __forceinline__ uint32_t pack2(float lo, float hi, __nv_bfloat16) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t pack2(float lo, float hi, __half) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// Output columns col and col + 1 (col even, < head_dim) at element offset at of p.out:
// one packed store when p.out_pairs, else each rounded to out's dtype (col + 1 only
// when inside head_dim).
template <class T>
__device__ __forceinline__ void store_out_pair(const Params& p, int64_t at, int col, float lo,
                                               float hi) {
  if (p.out_pairs) {
    *reinterpret_cast<uint32_t*>(static_cast<T*>(p.out) + at + col) = pack2(lo, hi, T());
  } else {
    store_f32(p.out, p.out_dtype, at + col, lo);
    if (col + 1 < p.head_dim) store_f32(p.out, p.out_dtype, at + col + 1, hi);
  }
}

// Rows [row0, row0 + rows) of one head's [tokens, head_dim] view (src: the head's first
// element, token stride ts) into a [rows][Dp + 8] tile; rows at or past `valid` and
// columns at or past head_dim are zeros. vec: 16-byte cp.async (the caller commits and
// waits), else plain loads and shared stores (visible after the caller's barrier).
template <int Dp, int kRowsTile, class T>
__device__ __forceinline__ void load_tile(T* dst, const T* src, int64_t ts, int row0, int valid,
                                          int head_dim, bool vec) {
  constexpr int kPitch = Dp + 8;
  if (vec) {
    constexpr int kChunks = Dp / 8;
    for (int c = threadIdx.x; c < kRowsTile * kChunks; c += kThreads) {
      const int r = c / kChunks, col = (c % kChunks) * 8;
      const bool ok = r < valid && col < head_dim;
      const T* from = ok ? src + int64_t(row0 + r) * ts + col : src;
      ptx::cp_async16(ptx::smem_addr(dst + r * kPitch + col), from, ok);
    }
  } else {
    for (int e = threadIdx.x; e < kRowsTile * Dp; e += kThreads) {
      const int r = e / Dp, col = e % Dp;
      dst[r * kPitch + col] =
          r < valid && col < head_dim ? src[int64_t(row0 + r) * ts + col] : from_float<T>(0.0f);
    }
  }
}

}  // namespace detail

template <int Dp, class T>
__global__ void __launch_bounds__(kThreads, 2) segment_attention_kernel(Params p) {
  using namespace detail;
  constexpr int MT = m_tiles<Dp>();
  constexpr int kRows = tile_rows<Dp>();
  constexpr int kPitch = Dp + 8;
  static_assert(Dp % 16 == 0 && Dp <= 128, "padded head dim");
  extern __shared__ __align__(128) unsigned char smem[];
  T* q_tile = reinterpret_cast<T*>(smem);
  T* k_tile = q_tile + kRows * kPitch;
  T* v_tile = k_tile + 2 * kKeys * kPitch;

  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int quad_row = lane / 4, quad_col = 2 * (lane % 4);  // C-fragment coordinates
  const int head = blockIdx.x;
  const Tile tile = p.tiles[blockIdx.y];
  const T* q = static_cast<const T*>(p.q) + int64_t(head) * p.q_h;
  const T* k = static_cast<const T*>(p.k) + int64_t(head) * p.k_h;
  const T* v = static_cast<const T*>(p.v) + int64_t(head) * p.v_h;
  const int n_keys = tile.k_end - tile.k_begin;
  const int n_tiles = (n_keys + kKeys - 1) / kKeys;  // >= 1: segments in the table are not empty

  auto load_kv = [&](int it, int stage) {
    const int k0 = tile.k_begin + it * kKeys;
    load_tile<Dp, kKeys>(k_tile + stage * kKeys * kPitch, k, p.k_t, k0, tile.k_end - k0, p.head_dim,
                         p.vec_in);
    load_tile<Dp, kKeys>(v_tile + stage * kKeys * kPitch, v, p.v_t, k0, tile.k_end - k0, p.head_dim,
                         p.vec_in);
  };
  load_tile<Dp, kRows>(q_tile, q, p.q_t, tile.q0, tile.nq, p.head_dim, p.vec_in);
  load_kv(0, 0);
  ptx::cp_async_commit();
  ptx::cp_async_wait<0>();
  __syncthreads();

  // The warp's query fragments (A operands), kept for every key tile.
  uint32_t q_frag[MT][Dp / 16][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int kk = 0; kk < Dp / 16; ++kk)
      ptx::ldmatrix_x4(q_frag[mt][kk],
                       ptx::smem_addr(q_tile + (warp * 16 * MT + mt * 16 + lane % 16) * kPitch +
                                      kk * 16 + 8 * (lane / 16)));

  float acc[MT][Dp / 8][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int n = 0; n < Dp / 8; ++n)
      acc[mt][n][0] = acc[mt][n][1] = acc[mt][n][2] = acc[mt][n][3] = 0.0f;
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.0f;

  for (int it = 0; it < n_tiles; ++it) {
    const int stage = it & 1, kt = tile.k_begin + it * kKeys;
    if (it + 1 < n_tiles) {  // stage ^ 1 was last read before the previous barrier
      load_kv(it + 1, stage ^ 1);
      ptx::cp_async_commit();
      ptx::cp_async_wait<1>();
    } else {
      ptx::cp_async_wait<0>();
    }
    __syncthreads();  // tile it visible to every warp

    // S = Q K^T for the warp's rows and the tile's keys.
    const T* ks = k_tile + stage * kKeys * kPitch;
    float s[MT][kKeys / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n)
        s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < Dp / 16; ++kk)
#pragma unroll
      for (int n2 = 0; n2 < kKeys / 16; ++n2) {
        uint32_t bk[4];
        ptx::ldmatrix_x4(bk, ptx::smem_addr(ks + (n2 * 16 + lane % 8 + 8 * (lane / 16)) * kPitch +
                                            kk * 16 + 8 * ((lane / 8) % 2)));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          ptx::mma_m16n8k16(s[mt][2 * n2], q_frag[mt][kk], bk[0], bk[1], T());
          ptx::mma_m16n8k16(s[mt][2 * n2 + 1], q_frag[mt][kk], bk[2], bk[3], T());
        }
      }

    // Online softmax in base 2; s becomes p. Keys past the segment's end (zeros in the
    // tile) exist only in its last tile.
    const bool masked = kt + kKeys > tile.k_end;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float mx = m[mt][i];
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float x = s[mt][n][2 * i + e] * p.scale_log2;
            if (masked && kt + n * 8 + quad_col + e >= tile.k_end) x = -INFINITY;
            s[mt][n][2 * i + e] = x;
            mx = fmaxf(mx, x);
          }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // Every tile holds at least one key of the segment, so mx is finite from the
        // first tile on; corr is exp2(-inf) = 0 there, scaling the zero accumulator.
        const float corr = exp2f(m[mt][i] - mx);
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float pr = exp2f(s[mt][n][2 * i + e] - mx);
            sum += pr;
            s[mt][n][2 * i + e] = pr;
          }
        l[mt][i] = l[mt][i] * corr + sum;  // this thread's keys; the quad is summed at the end
        m[mt][i] = mx;
        // Once the maxima settle most tiles leave corr = 1: skip the multiplies then.
        if (__any_sync(0xffffffffu, corr != 1.0f)) {
#pragma unroll
          for (int n = 0; n < Dp / 8; ++n) {
            acc[mt][n][2 * i] *= corr;
            acc[mt][n][2 * i + 1] *= corr;
          }
        }
      }

    // O += P V: P rounded to T (vt/ops/encoder.h) as A, V as B via ldmatrix.trans.
    const T* vs = v_tile + stage * kKeys * kPitch;
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        a[mt][0] = pack2(s[mt][2 * kk][0], s[mt][2 * kk][1], T());
        a[mt][1] = pack2(s[mt][2 * kk][2], s[mt][2 * kk][3], T());
        a[mt][2] = pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1], T());
        a[mt][3] = pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3], T());
      }
#pragma unroll
      for (int n2 = 0; n2 < Dp / 16; ++n2) {
        uint32_t bv[4];
        ptx::ldmatrix_x4_trans(
            bv, ptx::smem_addr(vs + (kk * 16 + lane % 8 + 8 * ((lane / 8) % 2)) * kPitch + n2 * 16 +
                               8 * (lane / 16)));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          ptx::mma_m16n8k16(acc[mt][2 * n2], a[mt], bv[0], bv[1], T());
          ptx::mma_m16n8k16(acc[mt][2 * n2 + 1], a[mt], bv[2], bv[3], T());
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }

#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float li = l[mt][i];
      li += __shfl_xor_sync(0xffffffffu, li, 1);
      li += __shfl_xor_sync(0xffffffffu, li, 2);
      const int r = warp * 16 * MT + mt * 16 + quad_row + 8 * i;
      if (r >= tile.nq) continue;
      const float inv = 1.0f / li;
      const int64_t at = int64_t(tile.q0 + r) * p.o_t + int64_t(head) * p.o_h;
#pragma unroll
      for (int n = 0; n < Dp / 8; ++n) {
        const int col = n * 8 + quad_col;
        if (col >= p.head_dim) continue;
        store_out_pair<T>(p, at, col, acc[mt][n][2 * i] * inv, acc[mt][n][2 * i + 1] * inv);
      }
    }
}

template <int Dp, class T>
void launch(const Params& p, int num_tiles, int heads, cudaStream_t stream) {
  constexpr int smem = smem_bytes<Dp>();
  // Every launch: the attribute is per device, and the call costs next to nothing.
  VT_CUDA_CHECK(cudaFuncSetAttribute(segment_attention_kernel<Dp, T>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid{unsigned(heads), unsigned(num_tiles)};
  segment_attention_kernel<Dp, T><<<grid, kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("segment_attention_kernel");
}

}  // namespace vt::cuda::segattn
