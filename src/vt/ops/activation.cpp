#include "vt/ops/activation.h"

#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/elementwise.h"
#endif

namespace vt {

namespace {
// The checks every same-shape unary op makes; returns the two row views.
std::pair<Rows, Rows> unary_args(Stream& s, const char* op, const Tensor& x, const Tensor& out) {
  expect_dtype(x, op, "x", kActDTypes);
  expect_dtype(out, op, "out", kActDTypes);
  expect_shape(out, op, "out", x.shape());
  expect_device(s, op, {&x, &out});
  expect_no_partial_alias(x, out, op, "x");
  return {rows_view(x, op, "x"), rows_view(out, op, "out")};
}
}  // namespace

void silu_and_mul(Stream& s, const Tensor& x, Tensor& out) {
  OpScope prof(s, "silu_and_mul");
  const char* op = "silu_and_mul";
  expect_dtype(x, op, "x", kActDTypes);
  expect_dtype(out, op, "out", kActDTypes);
  VT_CHECK(x.dim() >= 1 && x.size(-1) % 2 == 0, op, ": x ", x.str(),
           " needs an even last dim (gate and up halves)");
  Shape want = x.shape();
  want.back() /= 2;
  expect_shape(out, op, "out", want);
  expect_device(s, op, {&x, &out});
  // out may be x's gate half in place: the kernel reads each row whole before writing it.
  expect_no_partial_alias(x.slice(-1, 0, want.back()), out, op, "x");
  Rows xr = rows_view(x, op, "x"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::silu_and_mul(s, xr, outr);
#if VTLLM_WITH_CUDA
  cuda::silu_and_mul(s, xr, outr);
#else
  no_backend(op, s.device());
#endif
}

void sigmoid(Stream& s, const Tensor& x, Tensor& out) {
  OpScope prof(s, "sigmoid");
  auto [xr, outr] = unary_args(s, "sigmoid", x, out);
  if (s.device().is_cpu()) return cpu::sigmoid(s, xr, outr);
#if VTLLM_WITH_CUDA
  cuda::sigmoid(s, xr, outr);
#else
  no_backend("sigmoid", s.device());
#endif
}

void softmax(Stream& s, const Tensor& x, Tensor& out) {
  OpScope prof(s, "softmax");
  VT_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) > 0, "softmax: x ", x.str(),
           " needs a non-empty last dim");
  auto [xr, outr] = unary_args(s, "softmax", x, out);
  if (s.device().is_cpu()) return cpu::softmax(s, xr, outr);
#if VTLLM_WITH_CUDA
  cuda::softmax(s, xr, outr);
#else
  no_backend("softmax", s.device());
#endif
}

namespace {
void binary_op(Stream& s, const char* op, cpu::Binary kind, const Tensor& a, const Tensor& b,
               Tensor& out) {
  expect_dtype(a, op, "a", kActDTypes);
  expect_dtype(b, op, "b", kActDTypes);
  expect_dtype(out, op, "out", kActDTypes);
  expect_shape(b, op, "b", a.shape());
  expect_shape(out, op, "out", a.shape());
  expect_device(s, op, {&a, &b, &out});
  expect_no_partial_alias(a, out, op, "a");
  expect_no_partial_alias(b, out, op, "b");
  Rows ar = rows_view(a, op, "a"), br = rows_view(b, op, "b"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::binary(s, kind, ar, br, outr);
#if VTLLM_WITH_CUDA
  cuda::binary(s, kind == cpu::Binary::kAdd ? cuda::Binary::kAdd : cuda::Binary::kMul, ar, br, outr);
#else
  no_backend(op, s.device());
#endif
}
}  // namespace

void add(Stream& s, const Tensor& a, const Tensor& b, Tensor& out) {
  OpScope prof(s, "add");
  binary_op(s, "add", cpu::Binary::kAdd, a, b, out);
}
void mul(Stream& s, const Tensor& a, const Tensor& b, Tensor& out) {
  OpScope prof(s, "mul");
  binary_op(s, "mul", cpu::Binary::kMul, a, b, out);
}

}  // namespace vt
