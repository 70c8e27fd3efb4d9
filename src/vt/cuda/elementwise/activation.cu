// CUDA silu_and_mul, sigmoid, add, mul and the bias epilogue: one thread per output
// element of a [rows, cols] view of one or two levels (grid x over columns, grid y
// striding over rows; rows addressed through RowsRef), f32 compute and one rounding at
// the output, as the CPU reference. When every operand's rows allow it (rows_vec_ok:
// cols % 8 == 0, 16-byte aligned rows) a thread takes 8 consecutive columns with one
// 16-byte access per operand (two for f32): the same arithmetic per element, a quarter
// to an eighth of the memory instructions (prefill's [4096, 2 x 12288] silu_and_mul ran
// at ~1.1 TB/s one element per thread).
#include <algorithm>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/elementwise.h"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/row_chunks.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;  // columns per thread on the vector path

enum class Kind { kSiluMul, kSigmoid, kAdd, kMul, kBias };

// One output element from x (a's element) and o (b's element, or the up half's for
// kSiluMul): f32 compute, rounded by the store.
template <Kind kKind>
__device__ __forceinline__ float apply(float x, float o, DType out_dtype) {
  if constexpr (kKind == Kind::kSiluMul) {
    // silu rounds to out's dtype before the product (a no-op for f32), vt/ops/activation.h.
    return round_to(siluf(x), out_dtype) * o;
  } else if constexpr (kKind == Kind::kSigmoid) {
    return sigmoidf(x);
  } else if constexpr (kKind == Kind::kMul) {
    return x * o;
  } else {  // kAdd, kBias
    return x + o;
  }
}

// a: the input (x, or the left operand); b: the right operand or the bias row
// (broadcast_row); for kSiluMul the up half is a's row at column offset `cols`. A thread
// owns column c (kVector false) or columns [8c, 8c + 8) (kVector true).
template <Kind kKind, bool kVector>
__global__ void __launch_bounds__(kThreads)
    elementwise_kernel(RowsRef a, RowsRef b, RowsRef out, int64_t rows, int64_t cols) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  constexpr bool kHasOther = kKind != Kind::kSigmoid;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const char* ar = a.row(r);
    if constexpr (kVector) {
      const int64_t col = c * kVec;
      if (col >= cols) return;
      float x[kVec], o[kVec] = {}, y[kVec];
      chunk_detail::load_vec<kVec>(ar, a.dtype, col, x);
      if constexpr (kKind == Kind::kSiluMul)
        chunk_detail::load_vec<kVec>(ar, a.dtype, col + cols, o);
      else if constexpr (kHasOther)
        chunk_detail::load_vec<kVec>(b.row(r), b.dtype, col, o);
#pragma unroll
      for (int j = 0; j < kVec; ++j) y[j] = apply<kKind>(x[j], o[j], out.dtype);
      chunk_detail::store_vec<kVec>(out.row(r), out.dtype, col, y);
    } else {
      if (c >= cols) return;
      const float x = load_f32(ar, a.dtype, c);
      float o = 0.0f;
      if constexpr (kKind == Kind::kSiluMul)
        o = load_f32(ar, a.dtype, c + cols);
      else if constexpr (kHasOther)
        o = load_f32(b.row(r), b.dtype, c);
      store_f32(out.row(r), out.dtype, c, apply<kKind>(x, o, out.dtype));
    }
  }
}

template <Kind kKind>
void launch(Stream& s, const char* name, RowsRef a, RowsRef b, RowsRef out, int64_t rows,
            int64_t cols) {
  if (rows == 0 || cols == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  // silu_and_mul's a rows are 2 x cols wide: its up half starts at cols, aligned with
  // cols % 8 == 0; b is not read by silu_and_mul and sigmoid (it is a there).
  const bool vector =
      rows_vec_ok(a, cols, kVec) && rows_vec_ok(b, cols, kVec) && rows_vec_ok(out, cols, kVec);
  const int64_t threads_per_row = vector ? cols / kVec : cols;
  const int64_t col_blocks = (threads_per_row + kThreads - 1) / kThreads;
  VT_CHECK(col_blocks <= int64_t(0x7fffffff), name, " (CUDA): ", cols, " columns exceed the grid");
  dim3 grid(unsigned(col_blocks), unsigned(std::min<int64_t>(rows, 65535)));
  if (vector)
    launch_kernel(st, "elementwise_kernel", elementwise_kernel<kKind, true>, grid, dim3(kThreads),
                  0, a, b, out, rows, cols);
  else
    launch_kernel(st, "elementwise_kernel", elementwise_kernel<kKind, false>, grid, dim3(kThreads),
                  0, a, b, out, rows, cols);
}

}  // namespace

void silu_and_mul(Stream& s, const Rows& x, const Rows& out) {
  launch<Kind::kSiluMul>(s, "silu_and_mul", rows_ref(x), rows_ref(x), rows_ref(out), out.rows,
                         out.cols);
}

void sigmoid(Stream& s, const Rows& x, const Rows& out) {
  launch<Kind::kSigmoid>(s, "sigmoid", rows_ref(x), rows_ref(x), rows_ref(out), x.rows, x.cols);
}

void binary(Stream& s, Binary op, const Rows& a, const Rows& b, const Rows& out) {
  if (op == Binary::kAdd)
    launch<Kind::kAdd>(s, "add", rows_ref(a), rows_ref(b), rows_ref(out), a.rows, a.cols);
  else
    launch<Kind::kMul>(s, "mul", rows_ref(a), rows_ref(b), rows_ref(out), a.rows, a.cols);
}

void add_bias(Stream& s, const Rows& x, const Tensor& bias, const Rows& out) {
  launch<Kind::kBias>(s, "linear bias", rows_ref(x), broadcast_row(bias.data_ptr(), bias.dtype()),
                      rows_ref(out), x.rows, x.cols);
}

}  // namespace vt::cuda
