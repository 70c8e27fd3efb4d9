// The one RMSNorm kernel behind rms_norm (rms_norm.cu) and add_rms_norm
// (add_rms_norm.cu); CUDA sources of this folder only.
//
// One block per row; the block holds the row in registers (vt/cuda/row_chunks.cuh) when
// it fits one span (cols <= 2 * kNormVec * 1024 = 16384), else it walks the row span by span and
// re-reads each span's own elements in pass 2. Pass 1 loads the span (kAdd: forms the
// rounded residual R(x + delta) and stores it) and sums the squares in f32; with the row
// held, the weight's load is issued before the block reduction so its latency hides
// under it. Pass 2 normalises with the CPU reference's rounding points (vt/ops/norm.h).
// The residual equals the CPU's bit for bit; out matches it to f32 summation order.
#pragma once

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/row_chunks.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda::norm_detail {

constexpr int kNormVec = 8;  // elements per chunk: 16 bytes of bf16/f16
constexpr int kNormMaxThreads = 1024;

struct RmsNormRowsParams {
  RowsRef x;           // the input; kAdd: the residual, updated in place
  RowsRef delta = {};  // kAdd only
  RowsRef out;
  const void* w;
  DType w_dtype;
  int64_t cols;
  float eps;
  bool one_plus;
  bool vec = false;  // every operand may use the vector layout (set by the launcher)
};

template <bool kAdd, int kChunks>
__global__ void __launch_bounds__(kNormMaxThreads) rms_norm_rows_kernel(RmsNormRowsParams p) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t row = blockIdx.x;
  const int t = int(threadIdx.x), n = int(blockDim.x);
  const int64_t span = int64_t(kChunks) * kNormVec * n;
  char* x = p.x.row(row);
  char* out = p.out.row(row);
  float v[kChunks][kNormVec], u[kChunks][kNormVec];
  float ss = 0.0f;
  for (int64_t base = 0; base < p.cols; base += span) {
    load_span(x, p.x.dtype, p.vec, base, p.cols, t, n, v);
    if constexpr (kAdd) {
      load_span(p.delta.row(row), p.delta.dtype, p.vec, base, p.cols, t, n, u);
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
#pragma unroll
        for (int j = 0; j < kNormVec; ++j)
          // The residual stream rounds every add (qwen3_5.md §4); the norm reads the rounded value.
          v[c][j] = round_to(v[c][j] + u[c][j], p.x.dtype);
      store_span(x, p.x.dtype, p.vec, base, p.cols, t, n, v);
    }
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int j = 0; j < kNormVec; ++j) ss += v[c][j] * v[c][j];
  }
  const bool held = p.cols <= span;  // v is the whole row
  if (held) load_span(p.w, p.w_dtype, p.vec, 0, p.cols, t, n, u);
  const float inv = rsqrtf(block_sum_any(ss) / float(p.cols) + p.eps);
  // Qwen3RMSNorm (kPlain) with a narrow out: the normalised value rounds before the weight.
  const bool plain_narrow = !p.one_plus && p.out.dtype != DType::kF32;
  for (int64_t base = 0; base < p.cols; base += span) {
    if (!held) {  // the thread's own elements (kAdd: its own stores): no barrier needed
      load_span(x, p.x.dtype, p.vec, base, p.cols, t, n, v);
      load_span(p.w, p.w_dtype, p.vec, base, p.cols, t, n, u);
    }
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int j = 0; j < kNormVec; ++j) {
        const float w = p.one_plus ? u[c][j] + 1.0f : u[c][j];
        float y = v[c][j] * inv;
        if (plain_narrow) y = round_to(y, p.out.dtype);
        u[c][j] = y * w;
      }
    store_span(out, p.out.dtype, p.vec, base, p.cols, t, n, u);
  }
}

// Launches one block per row: one chunk slot per thread up to 8192 columns, two beyond,
// with the fewest threads (a multiple of 32, at most 1024) whose span covers the row.
template <bool kAdd>
void launch_rms_norm_rows(StreamState& st, const char* name, RmsNormRowsParams p, int64_t rows) {
  VT_CHECK(rows <= int64_t(0x7fffffff), name, " (CUDA): ", rows, " rows exceed the grid limit");
  p.vec = rows_vec_ok(p.x, p.cols, kNormVec) && rows_vec_ok(p.out, p.cols, kNormVec) &&
          (!kAdd || rows_vec_ok(p.delta, p.cols, kNormVec)) &&
          ptr_vec_ok(p.w, p.w_dtype, p.cols, kNormVec);
  const bool one_chunk = p.cols <= int64_t(kNormVec) * kNormMaxThreads;
  const int chunks = one_chunk ? 1 : 2;
  const int threads = span_threads(p.cols, kNormVec, chunks, kNormMaxThreads);
  launch_kernel(st, name, one_chunk ? rms_norm_rows_kernel<kAdd, 1> : rms_norm_rows_kernel<kAdd, 2>,
                dim3(unsigned(rows)), dim3(unsigned(threads)), 0, p);
}

}  // namespace vt::cuda::norm_detail
