// Device-side helpers shared by the CUDA kernel families (CUDA sources only):
// element loads and stores by run-time dtype, typed conversions, warp reductions.
//
// Memory-bound kernels take the dtype as a run-time argument: it is uniform across
// the grid, so the branch costs nothing next to the memory traffic, and one kernel
// serves every dtype pair. Kernels whose inner loops are arithmetic take the storage
// type as a template parameter instead (Storage<DType>).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "vt/dtype.h"
#include "vt/ops/args.h"

namespace vt::cuda {

inline constexpr int kWarp = 32;

// vt::Rows (vt/ops/args.h) on the device: row r's address by the same one- or two-level
// rule as Rows::offset, strides in bytes. Kernels that take [rows, cols] views address
// rows only through row(); rows_ref() makes one from the op's validated Rows.
struct RowsRef {
  char* data;
  DType dtype;
  bool two_level;      // Rows::one_level() negated
  int64_t inner_rows;  // rows per outer index (two-level form)
  int64_t row_bytes, outer_bytes;
  __host__ __device__ __forceinline__ char* row(int64_t r) const {
    return data + (two_level ? (r / inner_rows) * outer_bytes + (r % inner_rows) * row_bytes
                             : r * row_bytes);
  }
};

inline RowsRef rows_ref(const Rows& r) {
  const int64_t e = int64_t(dtype_size(r.dtype));
  RowsRef ref;
  ref.data = static_cast<char*>(r.data);
  ref.dtype = r.dtype;
  ref.two_level = !r.one_level();
  ref.inner_rows = r.inner_rows;
  ref.row_bytes = r.row_stride * e;
  ref.outer_bytes = r.outer_stride * e;
  return ref;
}

// One row seen at every r (row_bytes 0): the bias of linear's epilogue.
inline RowsRef broadcast_row(const void* data, DType dtype) {
  return {static_cast<char*>(const_cast<void*>(data)), dtype, false, 1, 0, 0};
}

__device__ __forceinline__ float load_f32(const void* p, DType dt, int64_t i) {
  if (dt == DType::kF32) return static_cast<const float*>(p)[i];
  if (dt == DType::kBF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return __half2float(static_cast<const __half*>(p)[i]);
}

// Rounds to nearest even when dt is narrower than f32.
__device__ __forceinline__ void store_f32(void* p, DType dt, int64_t i, float v) {
  if (dt == DType::kF32) {
    static_cast<float*>(p)[i] = v;
  } else if (dt == DType::kBF16) {
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  } else {
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  }
}

// v rounded to dt and widened back (v itself for f32): the intermediate rounding points
// of the narrow paths, as the CPU's vt::cpu::round_to (qwen3_5.md §1).
__device__ __forceinline__ float round_to(float v, DType dt) {
  if (dt == DType::kBF16) return __bfloat162float(__float2bfloat16_rn(v));
  if (dt == DType::kF16) return __half2float(__float2half_rn(v));
  return v;
}

// SiLU as PyTorch computes it (x / (1 + exp(-x))), the CPU reference's form.
__device__ __forceinline__ float siluf(float x) { return x / (1.0f + expf(-x)); }

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

// acc + a . b over the 8 bf16 pairs of two 16-byte loads: f32 FMAs in element order.
__device__ __forceinline__ float dot8(const uint4& a, const uint4& b, float acc) {
  const __nv_bfloat162* pa = reinterpret_cast<const __nv_bfloat162*>(&a);
  const __nv_bfloat162* pb = reinterpret_cast<const __nv_bfloat162*>(&b);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float2 fa = __bfloat1622float2(pa[q]), fb = __bfloat1622float2(pb[q]);
    acc = fmaf(fa.x, fb.x, acc);
    acc = fmaf(fa.y, fb.y, acc);
  }
  return acc;
}
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = kWarp / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int off = kWarp / 2; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// Sum over a block of kThreads threads (a multiple of 32); every thread gets the
// total. `red` is kThreads / 32 floats of shared memory; the call has barriers.
template <int kThreads>
__device__ __forceinline__ float block_sum(float v, float* red) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int i = 0; i < kThreads / 32; ++i) total += red[i];
  __syncthreads();  // red may be reused by the caller
  return total;
}

__device__ __forceinline__ float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

}  // namespace vt::cuda

