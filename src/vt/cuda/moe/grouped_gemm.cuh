// The bf16 grouped GEMM of moe_experts (cuda/moe/ only): out rows = A rows . W_e^T
// for each tile of one expert's permuted rows, on mma.sync m16n8k16 (f32 accumulate).
//
// A CTA owns one tile of the permutation (blockIdx.y: up to BM rows of one expert,
// CTAs past the device's tile count exit) and BN weight rows (blockIdx.x). Both
// operands are copied by 16-byte cp.async into a kStages ring of [rows][64] bf16 tiles
// (128-byte rows, the 16-byte chunks XOR-swizzled by row % 8: conflict-free ldmatrix),
// A gathered through the permutation (gate_up: x's rows of the entries' tokens; down:
// hid's permuted rows as they are), rows past the tile and chunks past K zero-filled.
// Each warp owns a WM x WN block of the tile. Every output element sums its K in
// 16-wide mma steps from k = 0 up in every configuration, and no CTA splits K, so a
// row's values do not depend on the tile shape, the other rows of its tile or the
// regime: a token's output is the same alone and in any batch.
//
// Epilogues, from the accumulators: kSwiGLU (gate_up): the CTA's weight rows interleave
// gate and up by 8 (tile columns 16g..16g+7 are gate rows j0+8g.., 16g+8..16g+15 the
// up rows of the same columns), so a thread holds g and u of the same hid column and
// stores R(R(silu(R(g))) * R(u)); down: R(R(d) * w_i) into y's row of the entry.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "vt/cuda/common.cuh"
#include "vt/cuda/moe/experts.cuh"
#include "vt/cuda/ptx.cuh"

namespace vt::cuda::moe {

inline constexpr int kBK = 64;             // k per stage: 128-byte shared rows
inline constexpr int kChunks = kBK / 8;    // 16-byte chunks per row
inline constexpr int kRowBytes = kBK * 2;  // bytes of one shared row

// Tile shape: BM rows x BN weight rows per CTA, WM x WN per warp, kStages ring depth,
// kMinBlocks CTAs per SM asked of the register allocator.
template <int BM_, int BN_, int WM_, int WN_, int kStages_, int kMinBlocks_>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_;
  static constexpr int kStages = kStages_, kMinBlocks = kMinBlocks_;
  static constexpr int kWarpsN = BN / WN, kWarps = (BM / WM) * kWarpsN;
  static constexpr int kThreads = kWarps * kWarp;
  static constexpr int MI = WM / 16, NI = WN / 8;  // mma tiles per warp
  static constexpr int kStageBytes = (BM + BN) * kRowBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes;
  static constexpr int kAIters = (BM * kChunks + kThreads - 1) / kThreads;
  static constexpr int kBIters = (BN * kChunks + kThreads - 1) / kThreads;
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0);
  static_assert(WN % 16 == 0, "gate/up pairs and x4 B loads take 16 columns at a time");
  static_assert(kThreads % kChunks == 0, "a thread copies the same chunk of every row it copies");
  static_assert(kStages >= 2);
};

// Arguments of one grouped GEMM launch (pointers on the device).
struct GemmArgs {
  const __nv_bfloat16* a;  // gate_up: x [T, K]; down: hid [T k, K] (permuted rows)
  const __nv_bfloat16* w;  // [E, kSwiGLU ? 2N : N, K]
  __nv_bfloat16* out;      // gate_up: hid [T k, N] (permuted rows); down: y [T k, N] (entries)
  Permutation perm;
  const void* route_w;  // down: topk_weights [T k]
  DType route_w_dtype;
  int k_top;
  int K, N;
};

__device__ __forceinline__ float bf16_round(float v) {
  return __bfloat162float(__float2bfloat16_rn(v));
}

template <class C, bool kSwiGLU>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks) grouped_gemm_kernel(GemmArgs g) {
  extern __shared__ __align__(128) unsigned char smem[];
  if (int(blockIdx.y) >= *g.perm.num_tiles) return;  // uniform over the block
  const Tile tile = g.perm.tiles[blockIdx.y];
  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
  const int wm = warp / C::kWarpsN, wn = warp % C::kWarpsN;
  const int64_t w_rows = kSwiGLU ? 2 * int64_t(g.N) : int64_t(g.N);
  const __nv_bfloat16* w_expert = g.w + int64_t(tile.expert) * w_rows * g.K;

  // The rows this thread copies (the same chunk `ch` of each) and whether they exist.
  const int ch = tid % kChunks;
  // A: the source row of each row this thread copies (-1: past the tile), 32-bit to
  // spare the 128-row tiles' registers.
  int32_t a_row[C::kAIters];
#pragma unroll
  for (int it = 0; it < C::kAIters; ++it) {
    const int row = (tid + it * C::kThreads) / kChunks;
    a_row[it] = -1;
    if (row < C::BM && row < tile.rows)
      a_row[it] = kSwiGLU ? g.perm.entries[tile.row0 + row] / g.k_top : tile.row0 + row;
  }
  // B rows: iteration it is `it * kThreads / kChunks` tile columns further on, i.e. a fixed
  // step of weight rows (half as many for the interleaved gate/up rows), so one pointer
  // and a validity mask describe them (registers the 128-row tiles need).
  constexpr int kColStep = C::kThreads / kChunks;
  static_assert(!kSwiGLU || kColStep % 16 == 0);
  const int c0 = tid / kChunks;
  int64_t col0, wrow0, row_step;
  if constexpr (kSwiGLU) {
    col0 = int64_t(blockIdx.x) * (C::BN / 2) + (c0 / 16) * 8 + (c0 % 8);
    wrow0 = (c0 % 16 < 8 ? 0 : g.N) + col0;
    row_step = kColStep / 2;
  } else {
    col0 = wrow0 = int64_t(blockIdx.x) * C::BN + c0;
    row_step = kColStep;
  }
  uint32_t b_ok = 0;
#pragma unroll
  for (int it = 0; it < C::kBIters; ++it)
    if (c0 + it * kColStep < C::BN && col0 + it * row_step < g.N) b_ok |= 1u << it;
  const __nv_bfloat16* b_src = w_expert + wrow0 * g.K;
  const int64_t b_step = row_step * g.K;

  auto load_stage = [&](int stage, int kt) {
    const uint32_t a_base = ptx::smem_addr(smem + stage * C::kStageBytes);
    const uint32_t b_base = a_base + C::BM * kRowBytes;
    const int kcol = kt * kBK + ch * 8;
    const bool k_ok = kcol < g.K;
#pragma unroll
    for (int it = 0; it < C::kAIters; ++it) {
      const int row = (tid + it * C::kThreads) / kChunks;
      if (row < C::BM)
        ptx::cp_async16(a_base + row * kRowBytes + ((ch ^ (row % 8)) << 4),
                        a_row[it] >= 0 && k_ok ? g.a + int64_t(a_row[it]) * g.K + kcol : g.a,
                        a_row[it] >= 0 && k_ok);
    }
#pragma unroll
    for (int it = 0; it < C::kBIters; ++it) {
      const int row = (tid + it * C::kThreads) / kChunks;
      if (row < C::BN)
        // The weight stream: L2 may fetch the 256 bytes around the chunk (the row's next
        // stage), as the skinny GEMM's weight copies do.
        ptx::cp_async16_l2_256b(b_base + row * kRowBytes + ((ch ^ (row % 8)) << 4),
                                (b_ok >> it & 1u) && k_ok ? b_src + it * b_step + kcol : g.w,
                                (b_ok >> it & 1u) && k_ok);
    }
  };

  float acc[C::MI][C::NI][4];
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < C::NI; ++ni)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[mi][ni][q] = 0.0f;

  const int nk = (g.K + kBK - 1) / kBK;
  // Rows of the tile in this warp's block (<= 0: none): the mma of 16-row slices past the
  // tile's rows are skipped (a partly filled tile, e.g. an expert's last, costs its loads
  // but only the products of its rows).
  const int warp_rows = tile.rows - wm * C::WM;
#pragma unroll
  for (int s = 0; s < C::kStages - 1; ++s) {
    if (s < nk) load_stage(s, s);
    ptx::cp_async_commit();
  }
  for (int kt = 0; kt < nk; ++kt) {
    ptx::cp_async_wait<C::kStages - 2>();
    __syncthreads();  // stage kt landed for every thread; stage kt - 1 is free
    const int next = kt + C::kStages - 1;
    if (next < nk) load_stage(next % C::kStages, next);
    ptx::cp_async_commit();
    const uint32_t a_base = ptx::smem_addr(smem + (kt % C::kStages) * C::kStageBytes);
    const uint32_t b_base = a_base + C::BM * kRowBytes;
    if (warp_rows <= 0) continue;  // the tile's rows end before this warp's block
      // Not unrolled: the 128-row tiles then fit 128 registers (2 CTAs per SM).
#pragma unroll 1
    for (int kk = 0; kk < kBK / 16; ++kk) {
      uint32_t af[C::MI][4], bf[C::NI][2];
#pragma unroll
      for (int mi = 0; mi < C::MI; ++mi) {
        if (mi * 16 >= warp_rows) continue;
        const int row = wm * C::WM + mi * 16 + (lane % 16);
        const int chunk = kk * 2 + lane / 16;
        ptx::ldmatrix_x4(af[mi], a_base + row * kRowBytes + ((chunk ^ (row % 8)) << 4));
      }
#pragma unroll
      for (int nj = 0; nj < C::NI / 2; ++nj) {
        const int row = wn * C::WN + nj * 16 + (lane % 8) + (lane / 16) * 8;
        const int chunk = kk * 2 + (lane / 8) % 2;
        uint32_t r[4];
        ptx::ldmatrix_x4(r, b_base + row * kRowBytes + ((chunk ^ (row % 8)) << 4));
        bf[2 * nj][0] = r[0];
        bf[2 * nj][1] = r[1];
        bf[2 * nj + 1][0] = r[2];
        bf[2 * nj + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < C::MI; ++mi) {
        if (mi * 16 >= warp_rows) continue;  // rows past the tile: no mma (warp-uniform)
#pragma unroll
        for (int ni = 0; ni < C::NI; ++ni)
          ptx::mma_m16n8k16(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1], __nv_bfloat16());
      }
    }
  }
  ptx::cp_async_wait<0>();

  // Accumulator q of a thread: row lane / 4 (+ 8 for q >= 2), column 2 (lane % 4) + q % 2.
  const int r_in = lane / 4, c_in = (lane % 4) * 2;
#pragma unroll
  for (int mi = 0; mi < C::MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = wm * C::WM + mi * 16 + r_in + 8 * h;
      if (row >= tile.rows) continue;
      const int64_t prow = tile.row0 + row;
      if constexpr (kSwiGLU) {
#pragma unroll
        for (int p = 0; p < C::NI / 2; ++p) {
          const int64_t col =
              int64_t(blockIdx.x) * (C::BN / 2) + ((wn * C::WN) / 16 + p) * 8 + c_in;
          if (col >= g.N) continue;  // N % 8 == 0: col + 1 < N too
          float v[2];
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            const float gate = bf16_round(acc[mi][2 * p][2 * h + q]);
            const float up = bf16_round(acc[mi][2 * p + 1][2 * h + q]);
            v[q] = __fmul_rn(bf16_round(siluf(gate)), up);
          }
          *reinterpret_cast<__nv_bfloat162*>(g.out + prow * g.N + col) =
              __floats2bfloat162_rn(v[0], v[1]);
        }
      } else {
        const int32_t entry = g.perm.entries[prow];
        const float w = load_f32(g.route_w, g.route_w_dtype, entry);
#pragma unroll
        for (int ni = 0; ni < C::NI; ++ni) {
          const int64_t col = int64_t(blockIdx.x) * C::BN + wn * C::WN + ni * 8 + c_in;
          if (col >= g.N) continue;
          const float y0 = __fmul_rn(bf16_round(acc[mi][ni][2 * h]), w);
          const float y1 = __fmul_rn(bf16_round(acc[mi][ni][2 * h + 1]), w);
          *reinterpret_cast<__nv_bfloat162*>(g.out + int64_t(entry) * g.N + col) =
              __floats2bfloat162_rn(y0, y1);
        }
      }
    }
  }
}

}  // namespace vt::cuda::moe
