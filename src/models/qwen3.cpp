// Qwen3 dense (transformers' Qwen3ForCausalLM): Qwen3RMSNorm (x * w), per-head q_norm and
// k_norm before a full-width NeoX rotary, GQA, SwiGLU MLP, optional tied lm_head.
#include "base/error.h"
#include "models/architectures.h"
#include "models/layers/decoder.h"

namespace vtllm::models {

std::unique_ptr<Model> build_qwen3(const io::ModelConfig& config, WeightStore& weights,
                                   const ModelOptions& options, vt::DType dtype) {
  const io::TextConfig& t = config.text;
  VT_CHECK(!t.attention_bias, "qwen3: attention_bias = true is not supported yet");
  VT_CHECK(t.rope.rope_type == "default", "qwen3: rope_type '", t.rope.rope_type,
           "' is not supported yet (only 'default')");
  VT_CHECK(!t.sliding_window.has_value(), "qwen3: sliding-window attention is not supported yet");
  DecoderSpec spec;
  spec.norm_kind = vt::RmsNormKind::kPlain;
  spec.attention = AttentionDims{
      .hidden = t.hidden_size,
      .heads = t.num_attention_heads,
      .kv_heads = t.num_key_value_heads,
      .head_dim = t.head_dim,
      .output_gate = false,
      .norm_kind = vt::RmsNormKind::kPlain,
      .eps = float(t.rms_norm_eps),
      .rope = RopeSpec{.rotary_dim = t.rotary_dim(), .theta = t.rope.rope_theta, .mrope_section = {}},
  };
  return build_decoder(config, spec, weights, options, dtype);
}

}  // namespace vtllm::models
