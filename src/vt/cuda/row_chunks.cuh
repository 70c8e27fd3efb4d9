// Register-held rows for the latency-bound row kernels (norms, embedding, argmax; CUDA
// sources only). A decode step runs these kernels on one to a few rows, where time is memory
// round trips, not bandwidth: a thread that loops "load, store, load, store" pays one
// full latency per element. Here a group of n threads (a block or a warp) holds a span
// of kChunks * kVec * n elements of a row in registers, every load of the span issued
// before any store, so a row of up to one span costs one round trip per pass.
//
// Thread t of the group owns, for each chunk slot c < kChunks, kVec elements:
//   vector layout: the consecutive elements [(c * n + t) * kVec, + kVec), read and
//     written with one 8- or 16-byte access per chunk (rows_vec_ok() must hold);
//   scalar layout: the elements (c * kVec + j) * n + t, j < kVec (coalesced, any
//     alignment, any cols).
// A span starts at element `base`; elements at or past `cols` read as 0 and are not
// written. The same thread reads back its own stores of a span (no barrier needed).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "vt/cuda/common.cuh"

namespace vt::cuda {

// True when rows of r may use the vector layout with kVec-element chunks: cols a
// multiple of kVec and every row start aligned to the chunk's access size.
inline bool rows_vec_ok(const RowsRef& r, int64_t cols, int vec) {
  const int64_t align = std::min<int64_t>(16, int64_t(vec) * int64_t(dtype_size(r.dtype)));
  return cols % vec == 0 && reinterpret_cast<uintptr_t>(r.data) % uint64_t(align) == 0 &&
         r.row_bytes % align == 0 && (!r.two_level || r.outer_bytes % align == 0);
}
inline bool ptr_vec_ok(const void* p, DType dt, int64_t cols, int vec) {
  return rows_vec_ok(RowsRef{static_cast<char*>(const_cast<void*>(p)), dt, false, 1, 0, 0}, cols,
                     vec);
}

// The threads for one row of `cols` elements held in kChunks chunks of kVec: enough that
// one span covers the row, a multiple of 32, at most max_threads.
inline int span_threads(int64_t cols, int vec, int chunks, int max_threads) {
  const int64_t per_thread = int64_t(vec) * chunks;
  const int64_t n = (cols + per_thread - 1) / per_thread;
  return int(std::clamp<int64_t>((n + kWarp - 1) / kWarp * kWarp, kWarp, max_threads));
}

namespace chunk_detail {

// kVec elements of dtype dt at element i (aligned to the access size) into v.
template <int kVec>
__device__ __forceinline__ void load_vec(const char* row, DType dt, int64_t i, float* v) {
  static_assert(kVec == 4 || kVec == 8, "chunks of 4 or 8 elements");
  if (dt == DType::kF32) {
    const float4* q = reinterpret_cast<const float4*>(row + i * 4);
#pragma unroll
    for (int k = 0; k < kVec / 4; ++k) {
      const float4 f = q[k];
      v[4 * k] = f.x, v[4 * k + 1] = f.y, v[4 * k + 2] = f.z, v[4 * k + 3] = f.w;
    }
    return;
  }
  using Word = std::conditional_t<kVec == 8, uint4, uint2>;  // 16 or 8 bytes
  const Word w = *reinterpret_cast<const Word*>(row + i * 2);
  if (dt == DType::kBF16) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&w);
#pragma unroll
    for (int k = 0; k < kVec / 2; ++k) {
      const float2 f = __bfloat1622float2(h[k]);
      v[2 * k] = f.x, v[2 * k + 1] = f.y;
    }
  } else {
    const __half2* h = reinterpret_cast<const __half2*>(&w);
#pragma unroll
    for (int k = 0; k < kVec / 2; ++k) {
      const float2 f = __half22float2(h[k]);
      v[2 * k] = f.x, v[2 * k + 1] = f.y;
    }
  }
}

// Rounds to nearest even when dt is narrower than f32, as store_f32.
template <int kVec>
__device__ __forceinline__ void store_vec(char* row, DType dt, int64_t i, const float* v) {
  if (dt == DType::kF32) {
    float4* q = reinterpret_cast<float4*>(row + i * 4);
#pragma unroll
    for (int k = 0; k < kVec / 4; ++k)
      q[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
    return;
  }
  using Word = std::conditional_t<kVec == 8, uint4, uint2>;
  Word w;
  if (dt == DType::kBF16) {
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&w);
#pragma unroll
    for (int k = 0; k < kVec / 2; ++k) h[k] = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
  } else {
    __half2* h = reinterpret_cast<__half2*>(&w);
#pragma unroll
    for (int k = 0; k < kVec / 2; ++k) h[k] = __floats2half2_rn(v[2 * k], v[2 * k + 1]);
  }
  *reinterpret_cast<Word*>(row + i * 2) = w;
}

}  // namespace chunk_detail

// The element that thread t's slot (c, j) holds in the span at `base` (the layouts above).
template <int kVec>
__device__ __forceinline__ int64_t span_element(bool vec, int64_t base, int c, int j, int t,
                                                int n) {
  return base + (vec ? (int64_t(c) * n + t) * kVec + j : (int64_t(c) * kVec + j) * n + t);
}

// Loads thread t's elements of the span at `base` (see the layouts above) into v.
template <int kVec, int kChunks>
__device__ __forceinline__ void load_span(const void* row, DType dt, bool vec, int64_t base,
                                          int64_t cols, int t, int n, float (&v)[kChunks][kVec]) {
  const char* r = static_cast<const char*>(row);
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    if (vec) {
      const int64_t i = span_element<kVec>(true, base, c, 0, t, n);
      if (i < cols) {
        chunk_detail::load_vec<kVec>(r, dt, i, v[c]);
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) v[c][j] = 0.0f;
      }
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int64_t i = span_element<kVec>(false, base, c, j, t, n);
        v[c][j] = i < cols ? load_f32(r, dt, i) : 0.0f;
      }
    }
  }
}

// Stores thread t's elements of the span at `base` from v (elements past cols skipped).
template <int kVec, int kChunks>
__device__ __forceinline__ void store_span(void* row, DType dt, bool vec, int64_t base,
                                           int64_t cols, int t, int n,
                                           const float (&v)[kChunks][kVec]) {
  char* r = static_cast<char*>(row);
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    if (vec) {
      const int64_t i = span_element<kVec>(true, base, c, 0, t, n);
      if (i < cols) chunk_detail::store_vec<kVec>(r, dt, i, v[c]);
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int64_t i = span_element<kVec>(false, base, c, j, t, n);
        if (i < cols) store_f32(r, dt, i, v[c][j]);
      }
    }
  }
}

// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024); every thread
// gets the total, summed in the same order by all. The call has barriers.
__device__ __forceinline__ float block_sum_any(float v) {
  __shared__ float red[32];
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (int i = 0; i < int(blockDim.x / 32); ++i) total += red[i];
  __syncthreads();  // red is reused by the next call
  return total;
}

}  // namespace vt::cuda
