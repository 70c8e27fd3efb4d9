#include "models/layers/attention.h"

#include <cmath>

#include "base/error.h"
#include "vt/ops/activation.h"
#include "vt/ops/attention.h"
#include "vt/ops/attn_preamble.h"
#include "vt/ops/copy.h"
#include "vt/ops/gemm.h"
#include "vt/ops/rope.h"

namespace vtllm::models {

FullAttention::FullAttention(const AttentionDims& d, ParamSink& w, const std::string& prefix,
                             bool fused_preamble)
    : d_(d), fused_(fused_preamble) {
  q_rows_ = d.heads * d.head_dim * (d.output_gate ? 2 : 1);
  kv_rows_ = d.kv_heads * d.head_dim;
  // One linear per step instead of three (the preamble and kv_cache_write read its column
  // slices).
  qkv_proj_ = w.take_stacked({{prefix + "q_proj.weight", q_rows_},
                              {prefix + "k_proj.weight", kv_rows_},
                              {prefix + "v_proj.weight", kv_rows_}},
                             d.hidden);
  o_proj_ = w.take(prefix + "o_proj.weight", {d.hidden, d.heads * d.head_dim});
  q_norm_ = w.take(prefix + "q_norm.weight", {d.head_dim});
  k_norm_ = w.take(prefix + "k_norm.weight", {d.head_dim});
}

void FullAttention::unfused_preamble(vt::Stream& s, const vt::Tensor& qg_slice,
                                     const vt::Tensor& k_slice, const BatchInputs& in,
                                     vt::Tensor& q_out, vt::Tensor& k_out, vt::Tensor& gate) const {
  VT_CHECK(in.positions.dim() == 1,
           "attention: the unfused preamble (VTLLM_FUSE_ATTN_PREAMBLE=0) applies 1-D rotary only, "
           "and this batch has MRoPE positions ",
           in.positions.str(), "; run with the fused preamble");
  const int64_t T = qg_slice.size(0), per_head = d_.head_dim * (d_.output_gate ? 2 : 1);
  // qg and k arrive as column slices of the fused qkv output (row stride q+2kv columns):
  // their per-head views would not collapse to one row stride (vt::Rows), so this
  // debugging path copies them out first; the fused preamble reads the slices directly.
  const vt::Tensor qg = vt::contiguous(s, qg_slice);
  const vt::Tensor k = vt::contiguous(s, k_slice);
  const vt::Tensor heads = qg.view({T, d_.heads, per_head});
  vt::rms_norm(s, heads.slice(2, 0, d_.head_dim), q_norm_, d_.eps, d_.norm_kind, q_out);
  vt::rms_norm(s, k.view({T, d_.kv_heads, d_.head_dim}), k_norm_, d_.eps, d_.norm_kind, k_out);
  // For 1-D positions in.cos_sin is the plain 1-D table (vt/ops/attn_preamble.h).
  vt::rope_neox(s, q_out, in.cos_sin, q_out);
  vt::rope_neox(s, k_out, in.cos_sin, k_out);
  if (d_.output_gate) vt::sigmoid(s, heads.slice(2, d_.head_dim, 2 * d_.head_dim), gate);
}

LayerCacheSpec FullAttention::cache_spec() const {
  LayerCacheSpec c;
  c.kind = LayerCacheSpec::Kind::kAttention;
  c.kv_heads = d_.kv_heads;
  c.head_dim = d_.head_dim;
  return c;
}

void FullAttention::forward(vt::Stream& s, const vt::Tensor& x, const BatchInputs& in,
                            CacheView& cache_view, int64_t layer, vt::Tensor& out) const {
  AttentionCache cache = cache_view.attention(layer);
  const int64_t T = x.size(0), D = d_.head_dim;
  // Every activation in x's dtype: in bf16 each projection, the normed and rotated q/k,
  // the sigmoid gate and the gated output round to bf16, as the oracle (qwen3_5.md §6).
  const vt::DType dt = x.dtype();
  const vt::Device dev = x.device();
  // One projection for q (with its gate), k and v; the ops below read column slices of
  // its output (features contiguous, row stride q + 2 kv columns).
  vt::Tensor qkv = vt::Tensor::empty({T, q_rows_ + 2 * kv_rows_}, dt, dev);
  vt::linear(s, x, qkv_proj_, qkv);
  const vt::Tensor qg = qkv.slice(1, 0, q_rows_);
  const vt::Tensor k_raw = qkv.slice(1, q_rows_, q_rows_ + kv_rows_);
  const vt::Tensor v = qkv.slice(1, q_rows_ + kv_rows_, q_rows_ + 2 * kv_rows_);

  vt::Tensor q = vt::Tensor::empty({T, d_.heads, D}, dt, dev);
  vt::Tensor k = vt::Tensor::empty({T, d_.kv_heads, D}, dt, dev);
  vt::Tensor gate = d_.output_gate ? vt::Tensor::empty({T, d_.heads, D}, dt, dev) : vt::Tensor();
  const vt::Tensor v_heads = v.reshape({T, d_.kv_heads, D});
  if (fused_) {
    // The step's keys and values go to the cache from the preamble's kernel.
    vt::attn_qk_norm_rope_gate(s, qg, k_raw, q_norm_, k_norm_, d_.eps, d_.norm_kind, in.cos_sin, q,
                               k, gate, {v_heads, in.slot_mapping, cache.k, cache.v});
  } else {
    unfused_preamble(s, qg, k_raw, in, q, k, gate);
    vt::kv_cache_write(s, k, v_heads, in.slot_mapping, cache.k, cache.v);
  }
  vt::Tensor o = vt::Tensor::empty({T, d_.heads, D}, dt, dev);
  vt::paged_attention(s, q, cache.k, cache.v, in.query_start_loc, in.seq_lens, in.block_table,
                      1.0f / std::sqrt(float(D)), o, in.bounds);
  if (d_.output_gate) vt::mul(s, o, gate, o);
  vt::linear(s, o.view({T, d_.heads * D}), o_proj_, out);
}

}  // namespace vtllm::models
