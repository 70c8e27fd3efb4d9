#include "vt/ops/gemm.h"

#include "vt/cpu/encoder.h"
#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"
#include "vt/ops/copy.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/gemm.h"
#endif

namespace vt {

namespace {

// linear's checks, and the profiled cost of the op.
void check_linear(Stream& s, OpScope& prof, const char* op, const Tensor& x, const Tensor& w,
                  const Tensor& out, const Tensor& bias) {
  expect_dtype(x, op, "x", kActDTypes);
  expect_dtype(w, op, "w", kActDTypes);
  expect_dtype(out, op, "out", kActDTypes);
  VT_CHECK(x.dim() == 2, op, ": x ", x.str(), " must be [M, K]");
  VT_CHECK(w.dim() == 2 && w.size(1) == x.size(1), op, ": w ", w.str(), " must be [N, ", x.size(1),
           "] for x ", x.str());
  expect_shape(out, op, "out", {x.size(0), w.size(0)});
  if (bias.defined()) {
    expect_dtype(bias, op, "bias", kActDTypes);
    expect_shape(bias, op, "bias", {w.size(0)});
    VT_CHECK(bias.is_contiguous(), op, ": bias ", bias.str(), " must be contiguous");
  }
  expect_device(s, op, {&x, &w, &out, &bias});
  expect_no_alias(x, out, op, "x");
  expect_no_alias(w, out, op, "w");
  if (prof.active()) {  // every operand once; 2 M N K
    const double m = double(x.size(0)), n = double(w.size(0)), k = double(x.size(1));
    prof.set_cost(m * k * double(x.itemsize()) + n * k * double(w.itemsize()) +
                      m * n * double(out.itemsize()),
                  2 * m * n * k);
  }
}

}  // namespace

void linear(Stream& s, const Tensor& x, const Tensor& w, Tensor& out, const Tensor& bias) {
  OpScope prof(s, "linear");
  const char* op = "linear";
  check_linear(s, prof, op, x, w, out, bias);
  Rows xr = rows_view(x, op, "x"), wr = rows_view(w, op, "w"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::linear(s, xr, wr, bias, outr);
#if VTLLM_WITH_CUDA
  cuda::linear(s, x, w, bias, out);
#else
  no_backend(op, s.device());
#endif
}

void linear_gelu(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias, GeluKind kind,
                 Tensor& out) {
  OpScope prof(s, "linear_gelu");
  const char* op = "linear_gelu";
  check_linear(s, prof, op, x, w, out, bias);
  Rows xr = rows_view(x, op, "x"), wr = rows_view(w, op, "w"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) {
    // The f32 sum, then the GELU on it and out's one rounding.
    Tensor acc = out.dtype() == DType::kF32 ? out : Tensor::empty(out.shape(), DType::kF32);
    Rows accr = rows_view(acc, op, "acc");
    cpu::linear(s, xr, wr, bias, accr);
    return cpu::gelu(s, accr, kind, outr);
  }
#if VTLLM_WITH_CUDA
  cuda::linear_gelu(s, x, w, bias, kind, out);
#else
  no_backend(op, s.device());
#endif
}

void matmul(Stream& s, const Tensor& a, const Tensor& b, Tensor& out) {
  OpScope prof(s, "matmul");
  VT_CHECK(b.defined() && b.dim() == 2, "matmul: b ", b.str(), " must be [K, N]");
  VT_CHECK(a.defined() && a.dim() == 2 && a.size(1) == b.size(0), "matmul: a ", a.str(),
           " must be [M, ", b.size(0), "] for b ", b.str());
  expect_dtype(b, "matmul", "b", kActDTypes);
  Tensor bt = contiguous(s, b.transpose(0, 1));
  Tensor ac = a.dim() == 2 && a.stride(1) == 1 ? a : contiguous(s, a);
  linear(s, ac, bt, out);
}

}  // namespace vt
