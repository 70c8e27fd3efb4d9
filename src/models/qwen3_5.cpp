// Qwen3.5 / Qwen3.6 dense hybrids (qwen3_5.md §4-§10): [GDN, GDN, GDN, full attention]
// layers, zero-centred (1 + w) RMSNorms, gated attention (q_proj emits query and gate
// per head) with partial interleaved-MRoPE rotary, SwiGLU MLP. For text-only input the
// three MRoPE rows are equal and the table equals 1-D rotary; the model advertises its
// sections so [3, T] positions from the multimodal path are applied as MRoPE.
#include "base/error.h"
#include "models/architectures.h"
#include "models/layers/decoder.h"

namespace vtllm::models {

std::unique_ptr<Model> build_qwen3_5(const io::ModelConfig& config, WeightStore& weights,
                                     const ModelOptions& options, vt::DType dtype) {
  const io::TextConfig& t = config.text;
  VT_CHECK(!t.moe.has_value(), "qwen3_5: the MoE variant is not supported yet");
  VT_CHECK(t.linear_attention.has_value(), "qwen3_5: the config has no linear-attention dims");
  VT_CHECK(t.rope.rope_type == "default", "qwen3_5: rope_type '", t.rope.rope_type,
           "' is not supported yet (only 'default')");
  DecoderSpec spec;
  spec.norm_kind = vt::RmsNormKind::kOnePlus;
  spec.attention = AttentionDims{
      .hidden = t.hidden_size,
      .heads = t.num_attention_heads,
      .kv_heads = t.num_key_value_heads,
      .head_dim = t.head_dim,
      .output_gate = true,  // transformers ignores attn_output_gate: always gated
      .norm_kind = vt::RmsNormKind::kOnePlus,
      .eps = float(t.rms_norm_eps),
      .rope = RopeSpec{.rotary_dim = t.rotary_dim(),
                       .theta = t.rope.rope_theta,
                       .mrope_section = t.rope.mrope_section},
  };
  return build_decoder(config, spec, weights, options, dtype);
}

}  // namespace vtllm::models
