#include "vt/ops/norm.h"

#include "vt/cpu/add_rms_norm.h"
#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/norm.h"
#include "vt/cuda/norm/add_rms_norm.h"
#endif

namespace vt {

void rms_norm(Stream& s, const Tensor& x, const Tensor& w, float eps, RmsNormKind kind, Tensor& out) {
  OpScope prof(s, "rms_norm");
  const char* op = "rms_norm";
  expect_dtype(x, op, "x", kActDTypes);
  expect_dtype(w, op, "w", kActDTypes);
  expect_dtype(out, op, "out", kActDTypes);
  expect_shape(out, op, "out", x.shape());
  VT_CHECK(x.dim() >= 1, op, ": x ", x.str(), " needs at least one dim");
  expect_shape(w, op, "w", {x.size(-1)});
  VT_CHECK(w.is_contiguous(), op, ": w ", w.str(), " must be contiguous");
  VT_CHECK(eps >= 0.0f, op, ": eps ", eps, " is negative");
  expect_device(s, op, {&x, &w, &out});
  expect_no_partial_alias(x, out, op, "x");
  expect_no_alias(w, out, op, "w");
  if (prof.active()) prof.set_cost(double(x.nbytes() + out.nbytes() + w.nbytes()), 0);
  Rows xr = rows_view(x, op, "x"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::rms_norm(s, xr, w, eps, kind, outr);
#if VTLLM_WITH_CUDA
  return cuda::rms_norm(s, xr, w, eps, kind, outr);
#else
  no_backend(op, s.device());
#endif
}

void l2_normalize(Stream& s, const Tensor& x, float eps, Tensor& out) {
  OpScope prof(s, "l2_normalize");
  const char* op = "l2_normalize";
  expect_dtype(x, op, "x", kActDTypes);
  expect_dtype(out, op, "out", kActDTypes);
  expect_shape(out, op, "out", x.shape());
  VT_CHECK(x.dim() >= 1, op, ": x ", x.str(), " needs at least one dim");
  VT_CHECK(eps >= 0.0f, op, ": eps ", eps, " is negative");
  expect_device(s, op, {&x, &out});
  expect_no_partial_alias(x, out, op, "x");
  Rows xr = rows_view(x, op, "x"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::l2_normalize(s, xr, eps, outr);
#if VTLLM_WITH_CUDA
  cuda::l2_normalize(s, xr, eps, outr);
#else
  no_backend(op, s.device());
#endif
}

void add_rms_norm(Stream& s, Tensor& residual, const Tensor& delta, const Tensor& w, float eps,
                  RmsNormKind kind, Tensor& out) {
  OpScope prof(s, "add_rms_norm");
  const char* op = "add_rms_norm";
  expect_dtype(residual, op, "residual", kActDTypes);
  expect_dtype(delta, op, "delta", kActDTypes);
  expect_dtype(w, op, "w", kActDTypes);
  expect_dtype(out, op, "out", kActDTypes);
  VT_CHECK(residual.dim() == 2, op, ": residual ", residual.str(), " must be [tokens, hidden]");
  expect_shape(delta, op, "delta", residual.shape());
  expect_shape(out, op, "out", residual.shape());
  expect_shape(w, op, "w", {residual.size(1)});
  for (const Tensor* t : {static_cast<const Tensor*>(&residual), &delta,
                          static_cast<const Tensor*>(&out), &w})
    VT_CHECK(t->is_contiguous(), op, ": ", t->str(), " must be contiguous");
  VT_CHECK(eps >= 0.0f, op, ": eps ", eps, " is negative");
  expect_device(s, op, {&residual, &delta, &w, &out});
  expect_no_alias(delta, residual, op, "delta");
  expect_no_alias(residual, out, op, "residual");
  expect_no_alias(w, residual, op, "w");
  expect_no_alias(w, out, op, "w");
  expect_no_partial_alias(delta, out, op, "delta");
  if (prof.active())  // residual read and written, delta read, out written
    prof.set_cost(double(2 * residual.nbytes() + delta.nbytes() + out.nbytes() + w.nbytes()), 0);
  Rows rr = rows_view(residual, op, "residual"), dr = rows_view(delta, op, "delta"),
       outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::add_rms_norm(s, rr, dr, w, eps, kind, outr);
#if VTLLM_WITH_CUDA
  cuda::add_rms_norm(s, rr, dr, w, eps, kind, outr);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
