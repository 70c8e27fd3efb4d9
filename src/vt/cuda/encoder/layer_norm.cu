// CUDA LayerNorm (vt/ops/encoder.h): one block per row, the row held in registers
// (vt/cuda/row_chunks.cuh) when it fits one span (cols <= 2 * 8 * 1024), else walked span
// by span and re-read in each pass. Two passes over the values: the mean, then the mean
// of squared deviations from it (the biased variance, never E[x^2] - mean^2, which
// cancels catastrophically on rows with a large mean), both f32 block sums; then
// out = (x - mean) * rstd * w + b in f32, rounded once at the store. add_layer_norm is the
// same kernel with a residual: its first pass adds r to x, rounds the sum to x's dtype,
// stores it back into x and goes on with the rounded values (a span the row does not hold
// is re-read from x by the thread that wrote it).
#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/encoder.h"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/row_chunks.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kVec = 8;  // elements per chunk: 16 bytes of bf16/f16
constexpr int kMaxThreads = 1024;

struct LayerNormParams {
  RowsRef x, out;
  RowsRef r;  // add_layer_norm's residual (kAdd only)
  const void* w;
  const void* b;
  DType w_dtype, b_dtype;
  int64_t cols;
  float eps;
  bool vec;  // every operand may use the vector layout
};

template <int kChunks, bool kAdd>
__global__ void __launch_bounds__(kMaxThreads) layer_norm_kernel(LayerNormParams p) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t row = blockIdx.x;
  const int t = int(threadIdx.x), n = int(blockDim.x);
  const int64_t span = int64_t(kChunks) * kVec * n;
  const bool held = p.cols <= span;
  const char* x = p.x.row(row);
  char* out = p.out.row(row);
  float v[kChunks][kVec], u[kChunks][kVec];

  float sum = 0.0f;
  for (int64_t base = 0; base < p.cols; base += span) {
    load_span(x, p.x.dtype, p.vec, base, p.cols, t, n, v);
    if constexpr (kAdd) {
      float a[kChunks][kVec];
      load_span(p.r.row(row), p.r.dtype, p.vec, base, p.cols, t, n, a);
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
#pragma unroll
        for (int j = 0; j < kVec; ++j) v[c][j] = round_to(v[c][j] + a[c][j], p.x.dtype);
      store_span(p.x.row(row), p.x.dtype, p.vec, base, p.cols, t, n, v);
    }
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int j = 0; j < kVec; ++j) sum += v[c][j];
  }
  const float mean = block_sum_any(sum) / float(p.cols);

  float ss = 0.0f;
  for (int64_t base = 0; base < p.cols; base += span) {
    if (!held) load_span(x, p.x.dtype, p.vec, base, p.cols, t, n, v);
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        // Elements past cols read as 0: they must not add mean^2.
        const bool in = span_element<kVec>(p.vec, base, c, j, t, n) < p.cols;
        const float d = in ? v[c][j] - mean : 0.0f;
        ss += d * d;
      }
  }
  const float rstd = 1.0f / sqrtf(block_sum_any(ss) / float(p.cols) + p.eps);

  for (int64_t base = 0; base < p.cols; base += span) {
    if (!held) load_span(x, p.x.dtype, p.vec, base, p.cols, t, n, v);
    float w[kChunks][kVec];
    load_span(p.w, p.w_dtype, p.vec, base, p.cols, t, n, w);
    load_span(p.b, p.b_dtype, p.vec, base, p.cols, t, n, u);
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int j = 0; j < kVec; ++j) u[c][j] = (v[c][j] - mean) * rstd * w[c][j] + u[c][j];
    store_span(out, p.out.dtype, p.vec, base, p.cols, t, n, u);
  }
}

// One launch of the kernel over x's rows; r is defined for add_layer_norm.
void launch_layer_norm(Stream& s, const Rows& x, const Rows* r, const Tensor& w, const Tensor& b,
                       float eps, const Rows& out) {
  if (x.rows == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  VT_CHECK(x.rows <= int64_t(0x7fffffff), "layer_norm (CUDA): ", x.rows,
           " rows exceed the grid limit");
  LayerNormParams p{.x = rows_ref(x),
                    .out = rows_ref(out),
                    .r = r ? rows_ref(*r) : RowsRef{},
                    .w = w.data_ptr(),
                    .b = b.data_ptr(),
                    .w_dtype = w.dtype(),
                    .b_dtype = b.dtype(),
                    .cols = x.cols,
                    .eps = eps,
                    .vec = false};
  p.vec = rows_vec_ok(p.x, p.cols, kVec) && rows_vec_ok(p.out, p.cols, kVec) &&
          (!r || rows_vec_ok(p.r, p.cols, kVec)) && ptr_vec_ok(p.w, p.w_dtype, p.cols, kVec) &&
          ptr_vec_ok(p.b, p.b_dtype, p.cols, kVec);
  const bool one_chunk = p.cols <= int64_t(kVec) * kMaxThreads;
  const int chunks = one_chunk ? 1 : 2;
  const int threads = span_threads(p.cols, kVec, chunks, kMaxThreads);
  auto kernel = r ? (one_chunk ? layer_norm_kernel<1, true> : layer_norm_kernel<2, true>)
                  : (one_chunk ? layer_norm_kernel<1, false> : layer_norm_kernel<2, false>);
  launch_kernel(st, r ? "add_layer_norm" : "layer_norm", kernel, dim3(unsigned(x.rows)),
                dim3(unsigned(threads)), 0, p);
}

}  // namespace

void layer_norm(Stream& s, const Rows& x, const Tensor& w, const Tensor& b, float eps,
                const Rows& out) {
  launch_layer_norm(s, x, nullptr, w, b, eps, out);
}

void add_layer_norm(Stream& s, const Rows& h, const Rows& r, const Tensor& w, const Tensor& b,
                    float eps, const Rows& out) {
  launch_layer_norm(s, h, &r, w, b, eps, out);
}

}  // namespace vt::cuda
