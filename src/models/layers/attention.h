// FullAttention: a full (softmax) attention layer over the paged KV cache.
//
// x [T, hidden] -> q_proj, k_proj, v_proj (stacked into one weight at load time, one
// linear per step); the preamble (per-head q-norm and k-norm,
// rotary on the first rotary_dim dims, and with an output gate the sigmoid of the gate
// half of q_proj, qwen3_5.md §6) through the fused AttnQkNormRopeGate op or, when
// ModelOptions::fuse_attn_preamble is off, separate ops from 1-D positions (MRoPE
// positions are refused there); K/V written to the cache through slot_mapping (by the
// fused preamble's kernel, or kv_cache_write after the separate ops); causal
// GQA attention with scale head_dim^-0.5; output times the gate; o_proj.
// Weights under `prefix` ("model.layers.3.self_attn."): q_proj [Hq*D*(gated ? 2 : 1), H],
// k_proj and v_proj [Hkv*D, H], o_proj [H, Hq*D], q_norm and k_norm [D]. No biases.
#pragma once

#include <string>

#include "models/cache.h"
#include "models/layers/batch_inputs.h"
#include "models/layers/blocks.h"
#include "models/params.h"
#include "vt/ops/norm.h"

namespace vtllm::models {

struct AttentionDims {
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0;
  bool output_gate = false;              // Qwen3.5: q_proj emits query and gate per head
  vt::RmsNormKind norm_kind = vt::RmsNormKind::kPlain;
  float eps = 1e-6f;
  RopeSpec rope;
};

class FullAttention final : public Mixer {
 public:
  FullAttention(const AttentionDims& dims, ParamSink& weights, const std::string& prefix,
                bool fused_preamble);

  // x [T, hidden] on the weights' device; every activation is computed in x's dtype.
  // out [T, hidden] in that dtype (must not overlap x). cache.attention(layer) holds its K/V.
  void forward(vt::Stream& s, const vt::Tensor& x, const BatchInputs& in, CacheView& cache,
               int64_t layer, vt::Tensor& out) const override;
  LayerCacheSpec cache_spec() const override;

 private:
  void unfused_preamble(vt::Stream& s, const vt::Tensor& qg_slice, const vt::Tensor& k_slice,
                        const BatchInputs& in, vt::Tensor& q_out, vt::Tensor& k_out,
                        vt::Tensor& gate) const;

  AttentionDims d_;
  bool fused_;
  int64_t q_rows_ = 0, kv_rows_ = 0;  // q_proj's rows (with the gate), k_proj's = v_proj's
  // q_proj, k_proj, v_proj stacked at load time: [q_rows + 2 kv_rows, hidden].
  vt::Tensor qkv_proj_, o_proj_, q_norm_, k_norm_;
};

}  // namespace vtllm::models
