// vt/ops/gdn.h: argument checks (once, before dispatch) and the backend choice.
#include "vt/ops/gdn.h"

#include "vt/cpu/gdn.h"
#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"
#include "vt/ops/indices.h"
#include "vt/ops/norm.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/gdn.h"
#include "vt/cuda/norm.h"
#endif

namespace vt {

namespace {

void expect_f32_contiguous(const Tensor& t, const char* op, const char* name, const Shape& shape) {
  expect_dtype(t, op, name, {DType::kF32});
  expect_shape(t, op, name, shape);
  VT_CHECK(t.is_contiguous(), op, ": ", name, " ", t.str(), " must be contiguous");
}

// state [slots, hv, dk, dv] f32 contiguous (the delta rule's, k-major).
void expect_state(const Tensor& state, const char* op, int64_t hv, int64_t dk, int64_t dv) {
  expect_dtype(state, op, "state", {DType::kF32});
  VT_CHECK(state.dim() == 4 && state.size(1) == hv && state.size(2) == dk && state.size(3) == dv &&
               state.is_contiguous(),
           op, ": state ", state.str(), " must be a contiguous [slots, ", hv, ", ", dk, ", ", dv,
           "]");
}

// gdn_gates' inputs: a, b [T, hv] (shape from a), A_log and dt_bias [hv], beta_round.
void gate_checks(const char* op, const Tensor& a, const Tensor& b, const Tensor& A_log,
                 const Tensor& dt_bias, DType beta_round) {
  expect_dtype(a, op, "a", kActDTypes);
  expect_dtype(b, op, "b", kActDTypes);
  VT_CHECK(a.dim() == 2, op, ": a ", a.str(), " must be [tokens, value_heads]");
  expect_shape(b, op, "b", a.shape());
  for (const Tensor* p : {&A_log, &dt_bias}) {
    expect_dtype(*p, op, "A_log/dt_bias", kActDTypes);
    expect_shape(*p, op, "A_log/dt_bias", {a.size(1)});
    VT_CHECK(p->is_contiguous(), op, ": A_log/dt_bias must be contiguous");
  }
  VT_CHECK(beta_round == DType::kF32 || beta_round == DType::kBF16 || beta_round == DType::kF16, op,
           ": beta_round ", dtype_name(beta_round), " is not one of f32, bf16, f16");
}

// The checks the two delta-rule forms share; returns the request layout.
Varlen delta_checks(const char* op, Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                    const Tensor& g, const Tensor& beta, const Tensor& qsl, const Tensor& state,
                    const Tensor& slots, const Tensor& out) {
  expect_heads(q, op, "q");
  expect_heads(k, op, "k");
  expect_heads(v, op, "v");
  expect_shape(k, op, "k", q.shape());
  const int64_t T = q.size(0), hk = q.size(1), dk = q.size(2), hv = v.size(1), dv = v.size(2);
  VT_CHECK(v.size(0) == T, op, ": v ", v.str(), " has a token count other than q's ", T);
  VT_CHECK(hk > 0 && hv % hk == 0, op, ": ", hv, " value heads are not a multiple of ", hk,
           " key heads");
  expect_f32_contiguous(g, op, "g", {T, hv});
  expect_f32_contiguous(beta, op, "beta", {T, hv});
  expect_state(state, op, hv, dk, dv);
  expect_dtype(out, op, "out", kActDTypes);
  expect_shape(out, op, "out", v.shape());
  VT_CHECK(out.is_contiguous(), op, ": out ", out.str(), " must be contiguous");
  for (const Tensor* in : {&q, &k, &v, &g, &beta, &state})
    expect_no_alias(*in, out, op, "an input");
  for (const Tensor* in : {&q, &k, &v, &g, &beta})
    expect_no_alias(*in, state, op, "an input");
  expect_device(s, op, {&q, &k, &v, &g, &beta, &state, &out});
  return read_varlen(s, qsl, slots, T, state.size(0), op);
}

}  // namespace

void causal_conv1d_silu(Stream& s, const Tensor& x, const Tensor& w, const Tensor& query_start_loc,
                        Tensor& conv_state, const Tensor& state_slots, Tensor& out) {
  OpScope prof(s, "causal_conv1d_silu");
  const char* op = "causal_conv1d_silu";
  expect_dtype(x, op, "x", kActDTypes);
  VT_CHECK(x.dim() == 2 && (x.stride(1) == 1 || x.size(1) == 1), op, ": x ", x.str(),
           " must be [tokens, channels] with channels contiguous");
  const int64_t T = x.size(0), C = x.size(1);
  expect_dtype(w, op, "w", kActDTypes);
  VT_CHECK(w.dim() == 2 && w.size(0) == C && w.size(1) >= 1 && w.is_contiguous(), op, ": w ",
           w.str(), " must be a contiguous [", C, ", kernel]");
  const int64_t H = w.size(1) - 1;
  expect_dtype(conv_state, op, "conv_state", {DType::kF32});
  VT_CHECK(conv_state.dim() == 3 && conv_state.size(1) == H && conv_state.size(2) == C &&
               conv_state.is_contiguous(),
           op, ": conv_state ", conv_state.str(), " must be a contiguous [slots, ", H, ", ", C, "]");
  expect_dtype(out, op, "out", kActDTypes);
  expect_shape(out, op, "out", {T, C});
  VT_CHECK(out.is_contiguous(), op, ": out ", out.str(), " must be contiguous");
  expect_no_alias(x, out, op, "x");
  expect_no_alias(conv_state, out, op, "conv_state");
  expect_no_alias(x, conv_state, op, "x");
  expect_device(s, op, {&x, &w, &conv_state, &out});
  const Varlen req = read_varlen(s, query_start_loc, state_slots, T, conv_state.size(0), op);
  if (s.device().is_cpu()) return cpu::causal_conv1d_silu(s, x, w, req, conv_state, out);
#if VTLLM_WITH_CUDA
  cuda::causal_conv1d_silu(s, x, w, req, conv_state, out);
#else
  no_backend(op, s.device());
#endif
}

void gdn_gates(Stream& s, const Tensor& a, const Tensor& b, const Tensor& A_log,
               const Tensor& dt_bias, DType beta_round, Tensor& g, Tensor& beta) {
  OpScope prof(s, "gdn_gates");
  const char* op = "gdn_gates";
  gate_checks(op, a, b, A_log, dt_bias, beta_round);
  const int64_t T = a.size(0), hv = a.size(1);
  expect_f32_contiguous(g, op, "g", {T, hv});
  expect_f32_contiguous(beta, op, "beta", {T, hv});
  expect_device(s, op, {&a, &b, &A_log, &dt_bias, &g, &beta});
  for (const Tensor* in : {&a, &b, &A_log, &dt_bias})
    for (const Tensor* o : {&g, &beta}) expect_no_alias(*in, *o, op, "an input");
  expect_no_alias(g, beta, op, "g");
  const Rows ar = rows_view(a, op, "a"), br = rows_view(b, op, "b");
  if (s.device().is_cpu()) return cpu::gdn_gates(s, ar, br, A_log, dt_bias, beta_round, g, beta);
#if VTLLM_WITH_CUDA
  cuda::gdn_gates(s, ar, br, A_log, dt_bias, beta_round, g, beta);
#else
  no_backend(op, s.device());
#endif
}

void gated_delta_rule_recurrent(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& g, const Tensor& beta, float scale,
                                const Tensor& query_start_loc, Tensor& state,
                                const Tensor& state_slots, Tensor& out) {
  OpScope prof(s, "gated_delta_rule_recurrent");
  const char* op = "gated_delta_rule_recurrent";
  const Varlen req =
      delta_checks(op, s, q, k, v, g, beta, query_start_loc, state, state_slots, out);
  if (s.device().is_cpu())
    return cpu::gated_delta_rule_recurrent(s, q, k, v, g, beta, scale, req, state, out);
#if VTLLM_WITH_CUDA
  cuda::gated_delta_rule(s, q, k, v, g, beta, scale, req, state, out);
#else
  no_backend(op, s.device());
#endif
}

void gated_delta_rule_chunked(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& g, const Tensor& beta, float scale,
                              const Tensor& query_start_loc, Tensor& state,
                              const Tensor& state_slots, Tensor& out) {
  OpScope prof(s, "gated_delta_rule_chunked");
  const char* op = "gated_delta_rule_chunked";
  const Varlen req =
      delta_checks(op, s, q, k, v, g, beta, query_start_loc, state, state_slots, out);
  if (s.device().is_cpu())
    return cpu::gated_delta_rule_chunked(s, q, k, v, g, beta, scale, req, state, out);
#if VTLLM_WITH_CUDA
  cuda::gated_delta_rule_chunked(s, q, k, v, g, beta, scale, req, state, out);
#else
  no_backend(op, s.device());
#endif
}

void gated_rms_norm(Stream& s, const Tensor& x, const Tensor& z, const Tensor& w, float eps,
                    Tensor& out) {
  OpScope prof(s, "gated_rms_norm");
  const char* op = "gated_rms_norm";
  expect_dtype(x, op, "x", kActDTypes);
  expect_dtype(z, op, "z", kActDTypes);
  expect_dtype(w, op, "w", kActDTypes);
  expect_dtype(out, op, "out", kActDTypes);
  VT_CHECK(x.dim() >= 1, op, ": x ", x.str(), " needs at least one dim");
  expect_shape(z, op, "z", x.shape());
  expect_shape(out, op, "out", x.shape());
  expect_shape(w, op, "w", {x.size(-1)});
  VT_CHECK(w.is_contiguous(), op, ": w ", w.str(), " must be contiguous");
  VT_CHECK(eps >= 0.0f, op, ": eps ", eps, " is negative");
  expect_no_partial_alias(x, out, op, "x");
  expect_no_partial_alias(z, out, op, "z");
  expect_device(s, op, {&x, &z, &w, &out});
  const Rows xr = rows_view(x, op, "x"), zr = rows_view(z, op, "z"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::gated_rms_norm(s, xr, zr, w, eps, outr);
#if VTLLM_WITH_CUDA
  cuda::gated_rms_norm(s, xr, zr, w, eps, outr);
#else
  no_backend(op, s.device());
#endif
}

namespace {

// gdn_fused_recurrent's definition, op by op in the layer's order (each op dispatches to
// the stream's backend): the CPU arm, and the CUDA arm for head sizes its kernel does
// not take.
void gdn_unfused_recurrent(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& z, const Tensor& a, const Tensor& b, const Tensor& A_log,
                           const Tensor& dt_bias, DType beta_round, float scale,
                           const Tensor& norm_w, float eps, const Tensor& query_start_loc,
                           Tensor& state, const Tensor& state_slots, Tensor& out) {
  OpScope prof(s, "gdn_unfused_recurrent");
  const Device dev = s.device();
  const int64_t T = q.size(0), hv = v.size(1);
  Tensor qn = Tensor::empty(q.shape(), DType::kF32, dev);
  Tensor kn = Tensor::empty(k.shape(), DType::kF32, dev);
  l2_normalize(s, q, kGdnL2NormEps, qn);
  l2_normalize(s, k, kGdnL2NormEps, kn);
  Tensor g = Tensor::empty({T, hv}, DType::kF32, dev);
  Tensor beta = Tensor::empty({T, hv}, DType::kF32, dev);
  gdn_gates(s, a, b, A_log, dt_bias, beta_round, g, beta);
  Tensor o = Tensor::empty(v.shape(), out.dtype(), dev);
  gated_delta_rule_recurrent(s, qn, kn, v, g, beta, scale, query_start_loc, state, state_slots, o);
  gated_rms_norm(s, o, z, norm_w, eps, out);
}

}  // namespace

void gdn_fused_recurrent(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& z, const Tensor& a, const Tensor& b, const Tensor& A_log,
                         const Tensor& dt_bias, DType beta_round, float scale, const Tensor& norm_w,
                         float eps, const Tensor& query_start_loc, Tensor& state,
                         const Tensor& state_slots, Tensor& out) {
  OpScope prof(s, "gdn_fused_recurrent");
  const char* op = "gdn_fused_recurrent";
  expect_heads(q, op, "q");
  expect_heads(k, op, "k");
  expect_heads(v, op, "v");
  expect_heads(z, op, "z");
  expect_shape(k, op, "k", q.shape());
  expect_shape(z, op, "z", v.shape());
  const int64_t T = q.size(0), hk = q.size(1), dk = q.size(2), hv = v.size(1), dv = v.size(2);
  VT_CHECK(v.size(0) == T, op, ": v ", v.str(), " has a token count other than q's ", T);
  VT_CHECK(hk > 0 && hv % hk == 0, op, ": ", hv, " value heads are not a multiple of ", hk,
           " key heads");
  gate_checks(op, a, b, A_log, dt_bias, beta_round);
  expect_shape(a, op, "a", {T, hv});
  expect_dtype(norm_w, op, "norm_w", kActDTypes);
  expect_shape(norm_w, op, "norm_w", {dv});
  VT_CHECK(norm_w.is_contiguous(), op, ": norm_w ", norm_w.str(), " must be contiguous");
  VT_CHECK(eps >= 0.0f, op, ": eps ", eps, " is negative");
  expect_state(state, op, hv, dk, dv);
  expect_dtype(out, op, "out", kActDTypes);
  expect_shape(out, op, "out", v.shape());
  VT_CHECK(out.is_contiguous(), op, ": out ", out.str(), " must be contiguous");
  for (const Tensor* in :
       {&q, &k, &v, &z, &a, &b, &A_log, &dt_bias, &norm_w, static_cast<const Tensor*>(&state)})
    expect_no_alias(*in, out, op, "an input");
  for (const Tensor* in : {&q, &k, &v, &z, &a, &b, &A_log, &dt_bias, &norm_w})
    expect_no_alias(*in, state, op, "an input");
  expect_device(s, op, {&q, &k, &v, &z, &a, &b, &A_log, &dt_bias, &norm_w, &state, &out});
  if (s.device().is_cpu())
    return gdn_unfused_recurrent(s, q, k, v, z, a, b, A_log, dt_bias, beta_round, scale, norm_w,
                                 eps, query_start_loc, state, state_slots, out);
#if VTLLM_WITH_CUDA
  if (!cuda::gdn_fused_recurrent_selected(s, query_start_loc.size(0) - 1, hv, dk, dv))
    return gdn_unfused_recurrent(s, q, k, v, z, a, b, A_log, dt_bias, beta_round, scale, norm_w,
                                 eps, query_start_loc, state, state_slots, out);
  const Rows ar = rows_view(a, op, "a"), br = rows_view(b, op, "b");
  const Varlen req = read_varlen(s, query_start_loc, state_slots, T, state.size(0), op);
  cuda::gdn_fused_recurrent(s, q, k, v, z, ar, br, A_log, dt_bias, beta_round, scale, norm_w, eps,
                            req, state, out);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
