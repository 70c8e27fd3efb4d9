// CUDA weighted_gather (vt/ops/encoder.h), the bilinear position-embedding lookup: one
// block per output row n, the fewest threads (a multiple of 32) whose 8-element chunks
// cover the row (row_chunks.cuh: 16-byte accesses when D % 8 == 0 and the rows align).
// Every thread reads the K (index, weight) pairs of row n, then accumulates its chunk of
// table[idx[n, k]] * weight[n, k] in k order with __fmul_rn / __fadd_rn (no FMA
// contraction: the products and the sum are each rounded to f32, as the contract and the
// CPU arm state), and stores it rounded once.
#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/encoder.h"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/row_chunks.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kVec = 8;
constexpr int kMaxThreads = 1024;

struct GatherParams {
  RowsRef table;
  const int32_t* idx;
  const float* weight;
  char* out;
  DType out_dtype;
  int64_t out_row_bytes;
  int64_t cols, k;
  bool vec;
};

__global__ void __launch_bounds__(kMaxThreads) weighted_gather_kernel(GatherParams p) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t n = blockIdx.x;
  const int t = int(threadIdx.x), threads = int(blockDim.x);
  const int64_t span = int64_t(kVec) * threads;
  for (int64_t base = 0; base < p.cols; base += span) {
    float acc[1][kVec], v[1][kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc[0][j] = 0.0f;
    for (int64_t k = 0; k < p.k; ++k) {
      const int32_t i = p.idx[n * p.k + k];
      const float w = p.weight[n * p.k + k];
      load_span(p.table.row(i), p.table.dtype, p.vec, base, p.cols, t, threads, v);
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc[0][j] = __fadd_rn(acc[0][j], __fmul_rn(v[0][j], w));
    }
    store_span(p.out + n * p.out_row_bytes, p.out_dtype, p.vec, base, p.cols, t, threads, acc);
  }
}

}  // namespace

void weighted_gather(Stream& s, const Rows& table, const Tensor& idx, const Tensor& weight,
                     const Tensor& out) {
  const int64_t n = out.shape()[0], cols = out.shape()[1], k = idx.shape()[1];
  if (n == 0 || cols == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  VT_CHECK(n <= int64_t(0x7fffffff), "weighted_gather (CUDA): ", n, " rows exceed the grid limit");
  GatherParams p{.table = rows_ref(table),
                 .idx = static_cast<const int32_t*>(idx.data_ptr()),
                 .weight = static_cast<const float*>(weight.data_ptr()),
                 .out = static_cast<char*>(const_cast<void*>(out.data_ptr())),
                 .out_dtype = out.dtype(),
                 .out_row_bytes = cols * int64_t(dtype_size(out.dtype())),
                 .cols = cols,
                 .k = k,
                 .vec = false};
  p.vec = rows_vec_ok(p.table, cols, kVec) && ptr_vec_ok(p.out, p.out_dtype, cols, kVec) &&
          p.out_row_bytes % 16 == 0;
  const int threads = span_threads(cols, kVec, 1, kMaxThreads);
  launch_kernel(st, "weighted_gather", weighted_gather_kernel, dim3(unsigned(n)),
                dim3(unsigned(threads)), 0, p);
}

}  // namespace vt::cuda
