// CUDA RMSNorm: one block per row; f32 sum of squares (per-thread partial sums,
// then a warp-shuffle and shared-memory tree), one rounding at the output (kPlain with a
// narrow out: also before the weight multiply, vt/ops/norm.h). Matches
// the CPU reference to f32 summation-order rounding (checked by tests/vt/cuda_norm_test).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/norm.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kF32 = int(DType::kF32), kBF16 = int(DType::kBF16);  // else f16

// The dtype is a runtime argument: it is uniform across the grid, so the branch
// costs nothing next to the memory traffic, and one kernel serves every pair.
__device__ __forceinline__ float load(const void* p, int dt, int64_t i) {
  if (dt == kF32) return static_cast<const float*>(p)[i];
  if (dt == kBF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return __half2float(static_cast<const __half*>(p)[i]);
}

__device__ __forceinline__ void store(void* p, int dt, int64_t i, float v) {
  if (dt == kF32) {
    static_cast<float*>(p)[i] = v;
  } else if (dt == kBF16) {
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  } else {
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  }
}

struct RmsNormParams {
  RowsRef x;
  int x_dtype;
  const void* w;
  int w_dtype;
  RowsRef out;
  int out_dtype;
  int64_t cols;
  float eps;
  bool one_plus;
};

__global__ void __launch_bounds__(kThreads) rms_norm_kernel(RmsNormParams p) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t row = blockIdx.x;
  const void* x = p.x.row(row);
  void* out = p.out.row(row);
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < p.cols; i += kThreads) {
    float v = load(x, p.x_dtype, i);
    ss += v * v;
  }
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  __shared__ float warp_sums[kThreads / 32];
  __shared__ float inv_rms;
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int i = 0; i < kThreads / 32; ++i) total += warp_sums[i];
    inv_rms = rsqrtf(total / float(p.cols) + p.eps);
  }
  __syncthreads();
  const float inv = inv_rms;
  for (int64_t i = threadIdx.x; i < p.cols; i += kThreads) {
    float w = load(p.w, p.w_dtype, i);
    if (p.one_plus) w += 1.0f;
    float v = load(x, p.x_dtype, i) * inv;
    // Qwen3RMSNorm (kPlain) with a narrow out: the normalised value rounds before the weight.
    if (!p.one_plus && p.out_dtype != kF32) v = round_to(v, DType(p.out_dtype));
    store(out, p.out_dtype, i, v * w);
  }
}

}  // namespace

void rms_norm(Stream& s, const Rows& x, const Tensor& w, float eps, RmsNormKind kind, const Rows& out) {
  if (x.rows == 0) return;
  VT_CHECK(x.rows <= int64_t(0x7fffffff), "rms_norm (CUDA): ", x.rows, " rows exceed the grid limit");
  StreamState& st = s.cuda_state();
  set_device(st);
  RmsNormParams p{rows_ref(x),    int(x.dtype),  w.data_ptr(),
                  int(w.dtype()), rows_ref(out), int(out.dtype),
                  x.cols,         eps,           kind == RmsNormKind::kOnePlus};
  launch_kernel(st, "rms_norm_kernel", rms_norm_kernel, dim3(unsigned(x.rows)), dim3(kThreads), 0,
                p);
}

}  // namespace vt::cuda
