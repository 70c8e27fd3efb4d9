// An independent enumeration of the transformers classes' parameters, written from
// docs/qwen3_5.md §3 as test reference data: the io loader tests load checkpoints
// made from it, and the models tests hold the layers' own declarations
// (models::declare_params) equal to it, name for name and shape for shape.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "io/config.h"
#include "io/weight_loader.h"
#include "io/weight_names.h"

namespace vtllm::io::testing {

namespace reference_detail {


using Shape = std::vector<int64_t>;

class SpecList {
 public:
  SpecList(std::vector<ParamSpec>& out, vt::DType dtype) : out_(out), dtype_(dtype) {}
  inline void add(const std::string& name, Shape shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) VT_THROW("parameter '", name, "' has too many elements");
    out_.push_back({name, std::move(shape), dtype_});
  }
  // A Linear's weight [out, in] and, with `bias`, its bias [out].
  inline void linear(const std::string& name, int64_t in, int64_t out, bool bias) {
    add(name + ".weight", {out, in});
    if (bias) add(name + ".bias", {out});
  }
  inline void norm(const std::string& name, int64_t n) { add(name + ".weight", {n}); }
  inline void layer_norm(const std::string& name, int64_t n) {  // LayerNorm: weight and bias
    add(name + ".weight", {n});
    add(name + ".bias", {n});
  }

 private:
  std::vector<ParamSpec>& out_;
  vt::DType dtype_;
};

inline void dense_mlp(SpecList& s, const std::string& p, int64_t hidden, int64_t inter, bool bias) {
  s.linear(p + "gate_proj", hidden, inter, bias);
  s.linear(p + "up_proj", hidden, inter, bias);
  s.linear(p + "down_proj", inter, hidden, bias);
}

// Llama / Qwen3 / Qwen3.5 full attention. Qwen3.5's q_proj emits query and gate per head.
inline void attention(SpecList& s, const std::string& p, const TextConfig& t, bool qk_norm) {
  const int64_t q_out = t.num_attention_heads * t.head_dim * (t.attn_output_gate ? 2 : 1);
  const int64_t kv_out = t.num_key_value_heads * t.head_dim;
  s.linear(p + "q_proj", t.hidden_size, q_out, t.attention_bias);
  s.linear(p + "k_proj", t.hidden_size, kv_out, t.attention_bias);
  s.linear(p + "v_proj", t.hidden_size, kv_out, t.attention_bias);
  s.linear(p + "o_proj", t.num_attention_heads * t.head_dim, t.hidden_size, t.attention_bias);
  if (qk_norm) {
    s.norm(p + "q_norm", t.head_dim);
    s.norm(p + "k_norm", t.head_dim);
  }
}

// Qwen3.5 Gated DeltaNet (reference §3.1).
inline void gated_delta_net(SpecList& s, const std::string& p, const TextConfig& t) {
  const LinearAttentionConfig& la = *t.linear_attention;
  s.linear(p + "in_proj_qkv", t.hidden_size, la.conv_dim(), false);
  s.linear(p + "in_proj_z", t.hidden_size, la.value_dim(), false);
  s.linear(p + "in_proj_b", t.hidden_size, la.num_value_heads, false);
  s.linear(p + "in_proj_a", t.hidden_size, la.num_value_heads, false);
  s.add(p + "conv1d.weight", {la.conv_dim(), 1, la.conv_kernel_dim});
  s.add(p + "dt_bias", {la.num_value_heads});
  s.add(p + "A_log", {la.num_value_heads});
  s.norm(p + "norm", la.value_head_dim);
  s.linear(p + "out_proj", la.value_dim(), t.hidden_size, false);
}

inline void sparse_moe(SpecList& s, const std::string& p, const TextConfig& t) {
  const MoeConfig& m = *t.moe;
  const int64_t h = t.hidden_size, i = m.moe_intermediate_size;
  s.add(p + "gate.weight", {m.num_experts, h});
  s.add(p + "experts.gate_up_proj", {m.num_experts, 2 * i, h});
  s.add(p + "experts.down_proj", {m.num_experts, h, i});
  dense_mlp(s, p + "shared_expert.", h, m.shared_expert_intermediate_size, false);
  s.linear(p + "shared_expert_gate", h, 1, false);
}

inline void text_model(SpecList& s, const std::string& p, const ModelConfig& c) {
  const TextConfig& t = c.text;
  const bool qk_norm = c.arch != Architecture::kLlama;
  s.add(p + "embed_tokens.weight", {t.vocab_size, t.hidden_size});
  for (int64_t l = 0; l < t.num_hidden_layers; ++l) {
    const std::string lp = str_cat(p, "layers.", l, ".");
    if (t.layer_types[size_t(l)] == LayerType::kLinearAttention) {
      gated_delta_net(s, lp + "linear_attn.", t);
    } else {
      attention(s, lp + "self_attn.", t, qk_norm);
    }
    if (t.moe) {
      sparse_moe(s, lp + "mlp.", t);
    } else {
      dense_mlp(s, lp + "mlp.", t.hidden_size, t.intermediate_size, t.mlp_bias);
    }
    s.norm(lp + "input_layernorm", t.hidden_size);
    s.norm(lp + "post_attention_layernorm", t.hidden_size);
  }
  s.norm(p + "norm", t.hidden_size);
}

// Qwen3.5 vision tower (reference §3.2).
inline void vision_model(SpecList& s, const std::string& p, const VisionConfig& v) {
  const int64_t h = v.hidden_size, merged = h * v.spatial_merge_size * v.spatial_merge_size;
  s.add(p + "patch_embed.proj.weight", {h, v.in_channels, v.temporal_patch_size, v.patch_size, v.patch_size});
  s.add(p + "patch_embed.proj.bias", {h});
  s.add(p + "pos_embed.weight", {v.num_position_embeddings, h});
  for (int64_t b = 0; b < v.depth; ++b) {
    const std::string bp = str_cat(p, "blocks.", b, ".");
    s.layer_norm(bp + "norm1", h);
    s.layer_norm(bp + "norm2", h);
    s.linear(bp + "attn.qkv", h, 3 * h, true);
    s.linear(bp + "attn.proj", h, h, true);
    s.linear(bp + "mlp.linear_fc1", h, v.intermediate_size, true);
    s.linear(bp + "mlp.linear_fc2", v.intermediate_size, h, true);
  }
  s.layer_norm(p + "merger.norm", h);
  s.linear(p + "merger.linear_fc1", merged, merged, true);
  s.linear(p + "merger.linear_fc2", merged, v.out_hidden_size, true);
}


}  // namespace reference_detail

// Every parameter of config's class (vision tower unless language_model_only; lm_head
// unless tied), in the order of the old enumeration.
inline std::vector<ParamSpec> reference_params(const ModelConfig& config,
                                               bool language_model_only = false) {
  using namespace reference_detail;
  std::vector<ParamSpec> out;
  SpecList s(out, config.dtype);
  if (config.multimodal && !language_model_only) vision_model(s, kVisionPrefix, *config.vision);
  text_model(s, language_model_prefix(config), config);
  if (!config.tie_word_embeddings) s.add("lm_head.weight", {config.text.vocab_size, config.text.hidden_size});
  return out;
}

}  // namespace vtllm::io::testing
