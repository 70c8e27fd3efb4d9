// vt/ops/attn_preamble.h: the cos/sin table builder (host), and the argument checks
// of AttnQkNormRopeGate (once, before dispatch to the CPU or CUDA arm).
#include "vt/ops/attn_preamble.h"

#include <cmath>

#include "vt/cpu/attention.h"
#include "vt/cpu/attn_preamble.h"
#include "vt/ops/args.h"
#include "vt/ops/attention.h"
#include "vt/ops/rope.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/attention.h"
#endif

namespace vt {

namespace {

int64_t position_at(const Tensor& p, int64_t row, int64_t t) {
  const int64_t off = (p.dim() == 2 ? row * p.stride(0) : 0) + t * p.stride(p.dim() - 1);
  return p.dtype() == DType::kI32 ? int64_t(static_cast<const int32_t*>(p.data_ptr())[off])
                                  : static_cast<const int64_t*>(p.data_ptr())[off];
}

// Which row of [3, T] positions drives frequency slot i (qwen3_5.md §7.3).
int64_t mrope_axis(int64_t i, const std::vector<int64_t>& section) {
  if (i % 3 == 1 && i < 3 * section[1]) return 1;
  if (i % 3 == 2 && i < 3 * section[2]) return 2;
  return 0;
}

void check_proj(const Tensor& t, const char* op, const char* name) {
  expect_dtype(t, op, name, kActDTypes);
  VT_CHECK(t.dim() == 2 && (t.stride(1) == 1 || t.size(1) == 1), op, ": ", name, " ", t.str(),
           " must be [tokens, features] with the features contiguous");
}

void check_out(const Tensor& t, const char* op, const char* name, const Shape& shape) {
  expect_dtype(t, op, name, kActDTypes);
  expect_shape(t, op, name, shape);
  VT_CHECK(t.stride(2) == 1 || t.size(2) == 1, op, ": ", name, " ", t.str(),
           " needs its head_dim contiguous");
}

}  // namespace

Tensor rope_cos_sin_table(const Tensor& positions, int64_t rotary_dim, double theta,
                          const std::vector<int64_t>& mrope_section) {
  const char* op = "rope_cos_sin_table";
  expect_dtype(positions, op, "positions", {DType::kI32, DType::kI64});
  VT_CHECK(positions.device().is_cpu(), op, ": positions ", positions.str(), " must be on the CPU");
  if (positions.dim() == 1) return rope_cos_sin_1d(positions, rotary_dim, theta);
  VT_CHECK(positions.dim() == 2 && positions.size(0) == 3, op, ": positions ", positions.str(),
           " must be [tokens] or MRoPE [3, tokens]");
  VT_CHECK(rotary_dim > 0, op, ": rotary_dim ", rotary_dim, " must be positive");
  VT_CHECK(theta > 1.0, op, ": theta ", theta, " must be > 1");
  const int64_t width = rope_table_width(rotary_dim), half = width / 2, n = positions.size(1);
  // As transformers: three sections, each interleave clipped to the half frequencies
  // (the sections need not sum to half).
  VT_CHECK(mrope_section.size() == 3 && mrope_section[1] >= 0 && mrope_section[2] >= 0, op,
           ": mrope_section of ", mrope_section.size(),
           " entries: expected 3 (temporal, height, width), none negative");
  // rope_cos_sin_1d's frequencies and angle formula, so equal rows match it
  const std::vector<float> inv_freq = rope_inv_freq(rotary_dim, theta);
  Tensor out = Tensor::empty({n, width}, DType::kF32);
  float* o = out.data<float>();
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const float angle =
          float(position_at(positions, mrope_axis(i, mrope_section), t)) * inv_freq[size_t(i)];
      o[t * width + i] = float(std::cos(double(angle)));
      o[t * width + half + i] = float(std::sin(double(angle)));
    }
  return out;
}

void attn_qk_norm_rope_gate(Stream& s, const Tensor& qg, const Tensor& k, const Tensor& q_norm_w,
                            const Tensor& k_norm_w, float eps, RmsNormKind kind,
                            const Tensor& cos_sin, Tensor& q_out, Tensor& k_out,
                            const Tensor& gate_out, const KvCacheWrite& cache) {
  OpScope prof(s, "attn_qk_norm_rope_gate");
  const char* op = "attn_qk_norm_rope_gate";
  check_proj(qg, op, "qg");
  check_proj(k, op, "k");
  VT_CHECK(q_out.defined() && q_out.dim() == 3 && k_out.defined() && k_out.dim() == 3, op,
           ": q_out and k_out must be [tokens, heads, head_dim]");
  const int64_t T = qg.size(0), hq = q_out.size(1), hkv = k_out.size(1), d = q_out.size(2);
  const bool gated = gate_out.defined();
  const int64_t per_head = gated ? 2 * d : d;
  VT_CHECK(qg.size(1) == hq * per_head, op, ": qg ", qg.str(), " should have ", hq, " heads of ",
           per_head, gated ? " (query then gate)" : " (query)");
  expect_shape(k, op, "k", {T, hkv * d});
  check_out(q_out, op, "q_out", {T, hq, d});
  check_out(k_out, op, "k_out", {T, hkv, d});
  if (gated) check_out(gate_out, op, "gate_out", {T, hq, d});
  expect_dtype(q_norm_w, op, "q_norm_w", kActDTypes);
  expect_dtype(k_norm_w, op, "k_norm_w", kActDTypes);
  expect_shape(q_norm_w, op, "q_norm_w", {d});
  expect_shape(k_norm_w, op, "k_norm_w", {d});
  VT_CHECK(q_norm_w.is_contiguous() && k_norm_w.is_contiguous(), op,
           ": norm weights must be contiguous");
  expect_dtype(cos_sin, op, "cos_sin", {DType::kF32});
  VT_CHECK(cos_sin.dim() == 2 && cos_sin.size(0) == T && cos_sin.is_contiguous(), op,
           ": cos_sin ", cos_sin.str(), " must be a contiguous [", T, ", rotary_dim]");
  const int64_t rd = cos_sin.size(1);
  VT_CHECK(rd > 0 && rd % 2 == 0 && rd <= d, op, ": rotary_dim ", rd,
           " must be even and within head_dim ", d);
  VT_CHECK(eps >= 0.0f, op, ": eps ", eps, " is negative");
  for (const Tensor* in : {&qg, &k})
    for (const Tensor* o : {static_cast<const Tensor*>(&q_out), static_cast<const Tensor*>(&k_out), &gate_out})
      if (o->defined()) expect_no_alias(*in, *o, op, "an input");
  expect_device(s, op, {&qg, &k, &q_norm_w, &k_norm_w, &cos_sin, &q_out, &k_out, &gate_out});
  SlotMapping slots;
  if (cache.defined()) {
    slots = check_kv_cache_write(s, k_out, cache.v, cache.slot_mapping, cache.k_cache,
                                 cache.v_cache, op);
    // One kernel reads qg, k and v while it writes q_out, k_out, gate_out and the caches:
    // the caches overlap none of them (k_out and v: check_kv_cache_write), and v overlaps
    // no output.
    for (const Tensor* t : {&qg, &k, static_cast<const Tensor*>(&q_out), &gate_out})
      for (const Tensor* c : {&cache.k_cache, &cache.v_cache})
        if (t->defined()) expect_no_alias(*t, *c, op, "an input or output");
    for (const Tensor* o : {static_cast<const Tensor*>(&q_out), static_cast<const Tensor*>(&k_out),
                            &gate_out})
      if (o->defined()) expect_no_alias(cache.v, *o, op, "v");
  }
  if (s.device().is_cpu()) {
    cpu::attn_qk_norm_rope_gate(s, qg, k, q_norm_w, k_norm_w, eps, kind, cos_sin, q_out, k_out,
                                gate_out);
    if (cache.defined())
      cpu::kv_cache_write(s, k_out, cache.v, slots.host, cache.k_cache, cache.v_cache);
    return;
  }
#if VTLLM_WITH_CUDA
  cuda::attn_qk_norm_rope_gate(s, qg, k, q_norm_w, k_norm_w, eps, kind, cos_sin, q_out, k_out,
                               gate_out, cache, slots);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
