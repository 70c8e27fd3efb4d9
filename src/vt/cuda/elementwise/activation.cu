// CUDA silu_and_mul, sigmoid, add, mul and the bias epilogue: one thread per output
// element of a [rows, cols] view of one or two levels (grid x over columns, grid y
// striding over rows; rows addressed through RowsRef), f32 compute and one rounding at
// the output, as the CPU reference.
#include <algorithm>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/elementwise.h"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kThreads = 256;

enum class Kind { kSiluMul, kSigmoid, kAdd, kMul, kBias };

// a: the input (x, or the left operand); b: the right operand or the bias row
// (broadcast_row); for kSiluMul the up half is a's row at column offset `cols`.
template <Kind kKind>
__global__ void __launch_bounds__(kThreads)
    elementwise_kernel(RowsRef a, RowsRef b, RowsRef out, int64_t rows, int64_t cols) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= cols) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const char* ar = a.row(r);
    const float x = load_f32(ar, a.dtype, c);
    float y;
    if constexpr (kKind == Kind::kSiluMul) {
      // silu rounds to out's dtype before the product (a no-op for f32), vt/ops/activation.h.
      y = round_to(siluf(x), out.dtype) * load_f32(ar, a.dtype, c + cols);
    } else if constexpr (kKind == Kind::kSigmoid) {
      y = sigmoidf(x);
    } else if constexpr (kKind == Kind::kMul) {
      y = x * load_f32(b.row(r), b.dtype, c);
    } else {  // kAdd, kBias
      y = x + load_f32(b.row(r), b.dtype, c);
    }
    store_f32(out.row(r), out.dtype, c, y);
  }
}

template <Kind kKind>
void launch(Stream& s, const char* name, RowsRef a, RowsRef b, RowsRef out, int64_t rows,
            int64_t cols) {
  if (rows == 0 || cols == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const int64_t col_blocks = (cols + kThreads - 1) / kThreads;
  VT_CHECK(col_blocks <= int64_t(0x7fffffff), name, " (CUDA): ", cols, " columns exceed the grid");
  dim3 grid(unsigned(col_blocks), unsigned(std::min<int64_t>(rows, 65535)));
  launch_kernel(st, "elementwise_kernel", elementwise_kernel<kKind>, grid, dim3(kThreads), 0, a, b,
                out, rows, cols);
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
