// CUDA softmax over the last dim (vt/ops/activation.h): a block per row, three passes
// over the row as the CPU arm: the max, the f32 sum of expf(x - max), then
// expf(x - max) * (1 / sum) with one rounding at out (exp recomputed rather than kept:
// a logits row of 151936 floats stays in L2 between the passes). Rows through RowsRef
// (one or two strides); out may be x (each element is read before it is written, by the
// thread that writes it, after the sum's barrier).
//
// Against the CPU arm: x - max is the same f32 value; CUDA's expf is within 2 ulp
// (glibc's within 1); the sum is a per-thread then tree sum (4e-7 relative at 151936
// columns), where the CPU's sequential f32 sum drops low bits of many small terms (up to
// ~3e-4 relative there): f32 outputs agree within 1e-3 relative, bf16 within one ulp.
#include <cmath>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/elementwise.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

// Max over a block of kThreads threads (a multiple of 32); every thread gets it. fmaxf
// skips NaN as the CPU's std::max(mx, v) does (a NaN still poisons the sum, as there).
template <int kThreads>
__device__ __forceinline__ float block_max(float v, float* red) {
  v = warp_max(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < kThreads / 32; ++i) m = fmaxf(m, red[i]);
  __syncthreads();  // red is reused by the sum
  return m;
}

template <int kThreads>
__global__ void __launch_bounds__(kThreads) softmax_kernel(RowsRef x, RowsRef out, int64_t cols) {
  __shared__ float red[kThreads / 32];
  const char* xr = x.row(blockIdx.x);
  char* orow = out.row(blockIdx.x);
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < cols; i += kThreads) mx = fmaxf(mx, load_f32(xr, x.dtype, i));
  mx = block_max<kThreads>(mx, red);
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < cols; i += kThreads)
    sum = __fadd_rn(sum, expf(__fsub_rn(load_f32(xr, x.dtype, i), mx)));
  sum = block_sum<kThreads>(sum, red);
  const float inv = __frcp_rn(sum);  // the CPU's 1.0f / sum, correctly rounded
  for (int64_t i = threadIdx.x; i < cols; i += kThreads)
    store_f32(orow, out.dtype, i, __fmul_rn(expf(__fsub_rn(load_f32(xr, x.dtype, i), mx)), inv));
}

}  // namespace

void softmax(Stream& s, const Rows& x, const Rows& out) {
  if (x.rows == 0) return;
  VT_CHECK(x.rows <= int64_t(0x7fffffff), "softmax (CUDA): ", x.rows,
           " rows exceed the grid limit");
  StreamState& st = s.cuda_state();
  set_device(st);
  // Vocabulary-sized rows get 1024 threads (~150 elements each at 151936); short rows 128.
  if (x.cols >= 8192) {
    softmax_kernel<1024>
        <<<unsigned(x.rows), 1024, 0, st.stream>>>(rows_ref(x), rows_ref(out), x.cols);
  } else {
    softmax_kernel<128>
        <<<unsigned(x.rows), 128, 0, st.stream>>>(rows_ref(x), rows_ref(out), x.cols);
  }
  VT_CUDA_CHECK_LAUNCH("softmax_kernel");
}

}  // namespace vt::cuda
