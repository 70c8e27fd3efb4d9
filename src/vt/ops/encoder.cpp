// vt/ops/encoder.h: argument checks (once, before dispatch) and the backend choice.
#include "vt/ops/encoder.h"

#include <cmath>
#include <vector>

#include "vt/cpu/encoder.h"
#include "vt/ops/args.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/encoder.h"
#endif

namespace vt {

namespace {

cpu::HeadsView heads_view(const Tensor& t) {
  return {t.data_ptr(), t.dtype(), t.size(0), t.size(1), t.size(2), t.stride(0), t.stride(1)};
}

#if VTLLM_WITH_CUDA
cuda::HeadsArg heads_arg(const Tensor& t) {
  return {t.data_ptr(), t.dtype(), t.stride(0), t.stride(1)};
}
#endif

// layer_norm's checks of x, w, b and out (the op named `op`).
void check_layer_norm(Stream& s, const char* op, const Tensor& x, const Tensor& w, const Tensor& b,
                      float eps, const Tensor& out) {
  expect_dtype(x, op, "x", kActDTypes);
  expect_dtype(w, op, "w", kActDTypes);
  expect_dtype(b, op, "b", kActDTypes);
  expect_dtype(out, op, "out", kActDTypes);
  expect_shape(out, op, "out", x.shape());
  VT_CHECK(x.dim() >= 1 && x.size(-1) > 0, op, ": x ", x.str(), " needs a non-empty last dim");
  expect_shape(w, op, "w", {x.size(-1)});
  expect_shape(b, op, "b", {x.size(-1)});
  VT_CHECK(w.is_contiguous(), op, ": w ", w.str(), " must be contiguous");
  VT_CHECK(b.is_contiguous(), op, ": b ", b.str(), " must be contiguous");
  VT_CHECK(eps >= 0.0f, op, ": eps ", eps, " is negative");
  expect_device(s, op, {&x, &w, &b, &out});
  expect_no_alias(w, out, op, "w");
  expect_no_alias(b, out, op, "b");
}

}  // namespace

void layer_norm(Stream& s, const Tensor& x, const Tensor& w, const Tensor& b, float eps,
                Tensor& out) {
  OpScope prof(s, "layer_norm");
  const char* op = "layer_norm";
  check_layer_norm(s, op, x, w, b, eps, out);
  expect_no_partial_alias(x, out, op, "x");
  Rows xr = rows_view(x, op, "x"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::layer_norm(s, xr, w, b, eps, outr);
#if VTLLM_WITH_CUDA
  cuda::layer_norm(s, xr, w, b, eps, outr);
#else
  no_backend(op, s.device());
#endif
}

void add_layer_norm(Stream& s, Tensor& h, const Tensor& r, const Tensor& w, const Tensor& b,
                    float eps, Tensor& out) {
  OpScope prof(s, "add_layer_norm");
  const char* op = "add_layer_norm";
  check_layer_norm(s, op, h, w, b, eps, out);
  expect_dtype(r, op, "r", kActDTypes);
  expect_shape(r, op, "r", h.shape());
  expect_device(s, op, {&r});
  expect_no_partial_alias(r, h, op, "r");
  expect_no_alias(h, out, op, "h");
  expect_no_alias(r, out, op, "r");
  expect_no_alias(w, h, op, "w");
  expect_no_alias(b, h, op, "b");
  Rows hr = rows_view(h, op, "h"), rr = rows_view(r, op, "r"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) {
    cpu::binary(s, cpu::Binary::kAdd, hr, rr, hr);
    return cpu::layer_norm(s, hr, w, b, eps, outr);
  }
#if VTLLM_WITH_CUDA
  cuda::add_layer_norm(s, hr, rr, w, b, eps, outr);
#else
  no_backend(op, s.device());
#endif
}

void gelu(Stream& s, const Tensor& x, GeluKind kind, Tensor& out) {
  OpScope prof(s, "gelu");
  const char* op = "gelu";
  expect_dtype(x, op, "x", kActDTypes);
  expect_dtype(out, op, "out", kActDTypes);
  expect_shape(out, op, "out", x.shape());
  expect_device(s, op, {&x, &out});
  expect_no_partial_alias(x, out, op, "x");
  Rows xr = rows_view(x, op, "x"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::gelu(s, xr, kind, outr);
#if VTLLM_WITH_CUDA
  cuda::gelu(s, xr, kind, outr);
#else
  no_backend(op, s.device());
#endif
}

void weighted_gather(Stream& s, const Tensor& table, const Tensor& idx, const Tensor& weight,
                     Tensor& out) {
  OpScope prof(s, "weighted_gather");
  const char* op = "weighted_gather";
  expect_dtype(table, op, "table", kActDTypes);
  expect_dtype(idx, op, "idx", {DType::kI32});
  expect_dtype(weight, op, "weight", {DType::kF32});
  expect_dtype(out, op, "out", kActDTypes);
  VT_CHECK(table.dim() == 2, op, ": table ", table.str(), " must be [rows, dim]");
  VT_CHECK(idx.dim() == 2, op, ": idx ", idx.str(), " must be [N, taps]");
  expect_shape(weight, op, "weight", idx.shape());
  expect_shape(out, op, "out", {idx.size(0), table.size(1)});
  VT_CHECK(idx.is_contiguous(), op, ": idx ", idx.str(), " must be contiguous");
  VT_CHECK(weight.is_contiguous(), op, ": weight ", weight.str(), " must be contiguous");
  VT_CHECK(out.is_contiguous(), op, ": out ", out.str(), " must be contiguous");
  expect_device(s, op, {&table, &idx, &weight, &out});
  expect_no_alias(table, out, op, "table");
  Rows tr = rows_view(table, op, "table");
  expect_one_level(tr, op, "table");
  if (s.device().is_cpu()) return cpu::weighted_gather(s, tr, idx, weight, out);
#if VTLLM_WITH_CUDA
  cuda::weighted_gather(s, tr, idx, weight, out);
#else
  no_backend(op, s.device());
#endif
}

void segment_attention(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& cu_seqlens, float scale, Tensor& out) {
  OpScope prof(s, "segment_attention");
  const char* op = "segment_attention";
  expect_heads(q, op, "q");
  expect_heads(k, op, "k");
  expect_heads(v, op, "v");
  expect_heads(out, op, "out");
  expect_shape(k, op, "k", q.shape());
  expect_shape(v, op, "v", q.shape());
  expect_shape(out, op, "out", q.shape());
  VT_CHECK(std::isfinite(scale), op, ": scale ", scale, " is not finite");
  expect_device(s, op, {&q, &k, &v, &out});
  for (const auto& [t, name] : {std::pair{&q, "q"}, std::pair{&k, "k"}, std::pair{&v, "v"}})
    expect_no_alias(*t, out, op, name);
  expect_dtype(cu_seqlens, op, "cu_seqlens", {DType::kI32});
  VT_CHECK(cu_seqlens.dim() == 1 && cu_seqlens.size(0) >= 1 && cu_seqlens.is_contiguous() &&
               cu_seqlens.device().is_cpu(),
           op, ": cu_seqlens ", cu_seqlens.str(), " must be a contiguous CPU [segments + 1]");
  const int32_t* cu = cu_seqlens.data<int32_t>();
  const int64_t n_cu = cu_seqlens.size(0), tokens = q.size(0);
  VT_CHECK(cu[0] == 0 && cu[n_cu - 1] == tokens, op, ": cu_seqlens must run from 0 to ", tokens,
           " tokens (got ", cu[0], " .. ", cu[n_cu - 1], ")");
  for (int64_t i = 0; i + 1 < n_cu; ++i)
    VT_CHECK(cu[i] <= cu[i + 1], op, ": cu_seqlens[", i, "] = ", cu[i], " > cu_seqlens[", i + 1,
             "] = ", cu[i + 1]);
  const std::vector<int32_t> bounds(cu, cu + n_cu);
  if (tokens == 0 || q.size(1) == 0 || q.size(2) == 0) return;
  if (s.device().is_cpu())
    return cpu::segment_attention(s, heads_view(q), heads_view(k), heads_view(v), bounds, scale,
                                  heads_view(out));
#if VTLLM_WITH_CUDA
  cuda::segment_attention(s, heads_arg(q), heads_arg(k), heads_arg(v), tokens, q.size(1), q.size(2),
                          bounds, scale, heads_arg(out));
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
