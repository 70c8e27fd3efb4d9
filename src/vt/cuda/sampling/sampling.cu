// CUDA embedding gather and greedy argmax.
//   embedding: one block per token (grid y strides over tokens), threads over the
//     hidden dim; exact or one rounding, as the CPU op.
//   argmax: one block of 512 threads per row; each thread scans a strided slice, then
//     a shared-memory tree picks the winner with torch.argmax's rule (NaN largest,
//     ties to the lowest index), so the result is independent of the scan order.
#include <algorithm>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/sampling.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kEmbedThreads = 256;
constexpr int kArgmaxThreads = 512;

__device__ __forceinline__ int64_t load_id(const void* p, DType dt, int64_t i) {
  return dt == DType::kI32 ? int64_t(static_cast<const int32_t*>(p)[i])
                           : static_cast<const int64_t*>(p)[i];
}

__global__ void __launch_bounds__(kEmbedThreads)
    embedding_kernel(RowsRef table, const void* ids, DType idt, int64_t id_stride, RowsRef out,
                     int64_t tokens, int64_t hidden) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const char* src = table.row(load_id(ids, idt, t * id_stride));
    char* dst = out.row(t);
    for (int64_t c = threadIdx.x; c < hidden; c += kEmbedThreads)
      store_f32(dst, out.dtype, c, load_f32(src, table.dtype, c));
  }
}

// True when (va, ia) beats (vb, ib) under torch.argmax's order.
__device__ __forceinline__ bool beats(float va, int64_t ia, float vb, int64_t ib) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb) return na;
  if (!na && va != vb) return va > vb;
  return ia < ib;
}

__global__ void __launch_bounds__(kArgmaxThreads)
    argmax_kernel(RowsRef logits, int64_t vocab, void* out, DType odt, int64_t out_stride,
                  int64_t rows) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  __shared__ float best_v[kArgmaxThreads];
  __shared__ int64_t best_i[kArgmaxThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const void* row = logits.row(r);
    float bv = -INFINITY;
    int64_t bi = vocab;  // loses to every real index
    for (int64_t i = threadIdx.x; i < vocab; i += kArgmaxThreads) {
      const float v = load_f32(row, logits.dtype, i);
      if (beats(v, i, bv, bi)) bv = v, bi = i;
    }
    best_v[threadIdx.x] = bv;
    best_i[threadIdx.x] = bi;
    __syncthreads();
    for (int half = kArgmaxThreads / 2; half > 0; half >>= 1) {
      if (threadIdx.x < half) {
        const int o = threadIdx.x + half;
        if (beats(best_v[o], best_i[o], best_v[threadIdx.x], best_i[threadIdx.x])) {
          best_v[threadIdx.x] = best_v[o];
          best_i[threadIdx.x] = best_i[o];
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (odt == DType::kI32)
        static_cast<int32_t*>(out)[r * out_stride] = int32_t(best_i[0]);
      else
        static_cast<int64_t*>(out)[r * out_stride] = best_i[0];
    }
    __syncthreads();
  }
}

}  // namespace

void embedding(Stream& s, const Rows& table, const Tensor& ids, const Rows& out) {
  const int64_t tokens = ids.size(0);
  if (tokens == 0 || table.cols == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const void* id_ptr = ids.data_ptr();
  DType idt = ids.dtype();
  int64_t id_stride = ids.stride(0);
  if (ids.device().is_cpu()) {  // the runner's ids: upload them with the op
    std::vector<int64_t> host(static_cast<size_t>(tokens));
    for (int64_t t = 0; t < tokens; ++t)
      host[size_t(t)] = idt == DType::kI32 ? ids.data<int32_t>()[t * id_stride]
                                           : ids.data<int64_t>()[t * id_stride];
    id_ptr = upload_indices(st, host);
    idt = DType::kI64;
    id_stride = 1;
  }
  const unsigned blocks = unsigned(std::min<int64_t>(tokens, 65535));
  launch_kernel(st, "embedding_kernel", embedding_kernel, dim3(blocks), dim3(kEmbedThreads), 0,
                rows_ref(table), id_ptr, idt, id_stride, rows_ref(out), tokens, table.cols);
}

void argmax(Stream& s, const Rows& logits, const Tensor& out) {
  if (logits.rows == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const unsigned blocks = unsigned(std::min<int64_t>(logits.rows, 65535));
  launch_kernel(st, "argmax_kernel", argmax_kernel, dim3(blocks), dim3(kArgmaxThreads), 0,
                rows_ref(logits), logits.cols, out.data_ptr(), out.dtype(), out.stride(0),
                logits.rows);
}

}  // namespace vt::cuda
