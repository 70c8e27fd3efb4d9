// CUDA GELU (vt/ops/encoder.h), tanh and erf forms: one thread per element of a
// [rows, cols] view of one or two levels (grid x over columns, grid y striding over rows,
// rows through RowsRef), or per 8 consecutive columns with 16-byte accesses when both
// operands' rows allow it (rows_vec_ok). f32 compute with the accurate tanhf / erff, the
// formulas PyTorch's CUDA kernels evaluate, one rounding at the store.
#include <algorithm>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/encoder.h"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/row_chunks.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;

template <GeluKind kKind>
__device__ __forceinline__ float gelu_f32(float x) {
  if constexpr (kKind == GeluKind::kTanh) {
    constexpr float kBeta = 0.7978845608028654f;  // sqrt(2 / pi)
    constexpr float kKappa = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(kBeta * (x + kKappa * x * x * x)));
  } else {
    constexpr float kRsqrt2 = 0.7071067811865476f;
    return 0.5f * x * (1.0f + erff(x * kRsqrt2));
  }
}

template <GeluKind kKind, bool kVector>
__global__ void __launch_bounds__(kThreads)
    gelu_kernel(RowsRef x, RowsRef out, int64_t rows, int64_t cols) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    if constexpr (kVector) {
      const int64_t col = c * kVec;
      if (col >= cols) return;
      float v[kVec];
      chunk_detail::load_vec<kVec>(x.row(r), x.dtype, col, v);
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] = gelu_f32<kKind>(v[j]);
      chunk_detail::store_vec<kVec>(out.row(r), out.dtype, col, v);
    } else {
      if (c >= cols) return;
      store_f32(out.row(r), out.dtype, c, gelu_f32<kKind>(load_f32(x.row(r), x.dtype, c)));
    }
  }
}

template <GeluKind kKind>
void launch_gelu(StreamState& st, RowsRef x, RowsRef out, int64_t rows, int64_t cols) {
  const bool vector = rows_vec_ok(x, cols, kVec) && rows_vec_ok(out, cols, kVec);
  const int64_t threads_per_row = vector ? cols / kVec : cols;
  const int64_t col_blocks = (threads_per_row + kThreads - 1) / kThreads;
  VT_CHECK(col_blocks <= int64_t(0x7fffffff), "gelu (CUDA): ", cols, " columns exceed the grid");
  const dim3 grid(unsigned(col_blocks), unsigned(std::min<int64_t>(rows, 65535)));
  launch_kernel(st, "gelu", vector ? gelu_kernel<kKind, true> : gelu_kernel<kKind, false>, grid,
                dim3(kThreads), 0, x, out, rows, cols);
}

}  // namespace

void gelu(Stream& s, const Rows& x, GeluKind kind, const Rows& out) {
  if (x.rows == 0 || x.cols == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  if (kind == GeluKind::kTanh)
    launch_gelu<GeluKind::kTanh>(st, rows_ref(x), rows_ref(out), x.rows, x.cols);
  else
    launch_gelu<GeluKind::kErf>(st, rows_ref(x), rows_ref(out), x.rows, x.cols);
}

}  // namespace vt::cuda
