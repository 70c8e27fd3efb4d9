// 3xTF32 warp products for the tensor-core chunked delta rule (chunk_wy_tc.cu,
// chunk_scan_tc.cu; CUDA sources of cuda/gdn/ only).
//
// Every operand of the chunk math is f32 (q and k after the l2 norm, the f32 state, W,
// U, P), so a plain tf32 product (10-bit mantissa) would lose the f32 accuracy the
// oracle's chunk math has (qwen3_5.md §8.7). Each operand x is split into
// big = tf32(x) and small = tf32(x - big) (x - big is exact in f32), and
//   a b ~ a_small b_big + a_big b_small + a_big b_big
// by three m16n8k8 tf32 mma with f32 accumulation, the small terms first; the dropped
// a_small b_small is ~2^-22 of |a b|, so a product sum is f32-level (as CUTLASS's
// 3xTF32 "fast accurate" GEMM). The kernels use mma_split: the residual products go to
// a second accumulator, so the big one takes one toward-zero rounding per k-step rather
// than three (a host emulation with toward-zero accumulation: out error 2x the f32
// kernels' with one accumulator, equal with two).
//
// The tf32 conversion and the m16n8k8 mma are in vt/cuda/ptx.cuh. Fragments of
// mma.m16n8k8.row.col tf32 (PTX ISA), lane = 4 g + t:
//   A 16x8 (row): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
//   B 8x8  (col): b0 (k t, n g), b1 (k t + 4, n g)
//   C 16x8:       c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1)
// The loaders read shared memory as f32 with a row stride in floats; which strides are
// free of bank conflicts is said at each (stride % 32 == 4 or 8).
#pragma once

#include <cstdint>

#include "vt/cuda/ptx.cuh"

namespace vt::cuda::gdn_chunk::mma3 {

// x as big + small, both tf32.
__device__ __forceinline__ void split(float x, uint32_t& big, uint32_t& small) {
  big = ptx::to_tf32_rna(x);
  small = ptx::to_tf32_rna(x - __uint_as_float(big));
}

struct FragA {
  uint32_t big[4], small[4];
};
struct FragB {
  uint32_t big[2], small[2];
};

__device__ __forceinline__ void set_a(FragA& a, float a0, float a1, float a2, float a3) {
  split(a0, a.big[0], a.small[0]);
  split(a1, a.big[1], a.small[1]);
  split(a2, a.big[2], a.small[2]);
  split(a3, a.big[3], a.small[3]);
}
__device__ __forceinline__ void set_b(FragB& b, float b0, float b1) {
  split(b0, b.big[0], b.small[0]);
  split(b1, b.big[1], b.small[1]);
}

// c += a b to f32 accuracy (the small terms first).
__device__ __forceinline__ void mma(float (&c)[4], const FragA& a, const FragB& b) {
  ptx::mma_m16n8k8_tf32(c, a.small, b.big);
  ptx::mma_m16n8k8_tf32(c, a.big, b.small);
  ptx::mma_m16n8k8_tf32(c, a.big, b.big);
}

// The same product with the residual terms summed into their own accumulator `lo`, which
// the caller adds to `hi` at the end: the tensor cores round each mma's sum toward zero
// at the accumulator's magnitude (no round-to-nearest), so two of three roundings on the
// big accumulator go, and those on `lo` are ~2^-11 smaller. Two independent chains, too.
__device__ __forceinline__ void mma_split(float (&hi)[4], float (&lo)[4], const FragA& a,
                                          const FragB& b) {
  ptx::mma_m16n8k8_tf32(lo, a.small, b.big);
  ptx::mma_m16n8k8_tf32(lo, a.big, b.small);
  ptx::mma_m16n8k8_tf32(hi, a.big, b.big);
}

__device__ __forceinline__ int lane_g() { return int(threadIdx.x % 32) / 4; }
__device__ __forceinline__ int lane_t() { return int(threadIdx.x % 32) % 4; }

// A[m][k] = M[m][k], M row-major from the tile's corner (conflict-free at stride % 32 == 4).
__device__ __forceinline__ void load_a(FragA& a, const float* m, int stride) {
  const int g = lane_g(), t = lane_t();
  set_a(a, m[g * stride + t], m[(g + 8) * stride + t], m[g * stride + t + 4],
        m[(g + 8) * stride + t + 4]);
}
// A[m][k] = M[k][m] * f[k], M row-major from the tile's corner (conflict-free at
// stride % 32 == 8); f0 = f[t], f4 = f[t + 4] (a per-k scale, the decay of k rows).
__device__ __forceinline__ void load_a_trans(FragA& a, const float* m, int stride, float f0,
                                             float f4) {
  const int g = lane_g(), t = lane_t();
  set_a(a, m[t * stride + g] * f0, m[t * stride + g + 8] * f0, m[(t + 4) * stride + g] * f4,
        m[(t + 4) * stride + g + 8] * f4);
}
// B[k][n] = M[k][n], M row-major from the tile's corner (conflict-free at stride % 32 == 8).
__device__ __forceinline__ void load_b(FragB& b, const float* m, int stride) {
  const int g = lane_g(), t = lane_t();
  set_b(b, m[t * stride + g], m[(t + 4) * stride + g]);
}
// B[k][n] = M[n][k], M row-major from the tile's corner (conflict-free at stride % 32 == 4).
__device__ __forceinline__ void load_b_trans(FragB& b, const float* m, int stride) {
  const int g = lane_g(), t = lane_t();
  set_b(b, m[g * stride + t], m[g * stride + t + 4]);
}

}  // namespace vt::cuda::gdn_chunk::mma3
