// Qwen3 dense (transformers' Qwen3ForCausalLM): Qwen3RMSNorm (x * w), per-head q_norm
// and k_norm before a full-width NeoX rotary, GQA, SwiGLU MLP, optional tied lm_head.
#include "base/error.h"
#include "models/layers/attention.h"
#include "models/layers/decoder.h"
#include "models/layers/mlp.h"
#include "models/registry.h"

namespace vtllm::models {

std::unique_ptr<Model> build_qwen3(const io::ModelConfig& config, ParamSink& w,
                                   const ModelOptions& options, vt::DType dtype) {
  const io::TextConfig& t = config.text;
  VT_CHECK(!t.attention_bias, "qwen3: attention_bias = true is not supported yet");
  VT_CHECK(t.rope.rope_type == "default", "qwen3: rope_type '", t.rope.rope_type,
           "' is not supported yet (only 'default')");
  VT_CHECK(!t.sliding_window.has_value(), "qwen3: sliding-window attention is not supported yet");
  const RopeSpec rope{.rotary_dim = t.rotary_dim(), .theta = t.rope.rope_theta, .mrope_section = {}};
  const AttentionDims attn{
      .hidden = t.hidden_size,
      .heads = t.num_attention_heads,
      .kv_heads = t.num_key_value_heads,
      .head_dim = t.head_dim,
      .output_gate = false,
      .norm_kind = vt::RmsNormKind::kPlain,
      .eps = float(t.rms_norm_eps),
      .rope = rope,
  };
  DecoderStack stack(config, w, vt::RmsNormKind::kPlain, rope);
  for (int64_t i = 0; i < t.num_hidden_layers; ++i) {
    const std::string p = stack.layer_prefix(i);
    VT_CHECK(t.layer_types[size_t(i)] == io::LayerType::kFullAttention, "qwen3: layer ", i, " is ",
             io::layer_type_name(t.layer_types[size_t(i)]), ", which qwen3 does not build");
    stack.add_layer(w,
                    std::make_unique<FullAttention>(attn, w, p + "self_attn.",
                                                    options.fuse_attn_preamble),
                    std::make_unique<SwiGluMlp>(t.hidden_size, t.intermediate_size, w, p + "mlp."));
  }
  return std::make_unique<DecoderModel>(config, std::move(stack), w.device(), dtype);
}

}  // namespace vtllm::models
