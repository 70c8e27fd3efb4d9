#include "vt/ops/norm.h"

#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/norm.h"
#endif

namespace vt {

void rms_norm(Stream& s, const Tensor& x, const Tensor& w, float eps, RmsNormKind kind, Tensor& out) {
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
  Rows xr = rows_view(x, op, "x"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::rms_norm(s, xr, w, eps, kind, outr);
#if VTLLM_WITH_CUDA
  return cuda::rms_norm(s, xr, w, eps, kind, outr);
#else
  no_backend(op, s.device());
#endif
}

void l2_normalize(Stream& s, const Tensor& x, float eps, Tensor& out) {
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

}  // namespace vt
