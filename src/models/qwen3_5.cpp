// Qwen3.5 / Qwen3.6 dense hybrids (qwen3_5.md §4-§10): GDN layers and gated full
// attention as layer_types says ([GDN, GDN, GDN, full attention] by default),
// zero-centred (1 + w) RMSNorms, gated attention (q_proj emits query and gate per head)
// with partial interleaved-MRoPE rotary, SwiGLU MLP. For text-only input the three
// MRoPE rows are equal and the table equals 1-D rotary; [3, T] positions from the
// multimodal path are applied as MRoPE with the config's sections.
// Qwen3_5ForCausalLM, and Qwen3_5ForConditionalGeneration: the same text model under
// model.language_model.* with the vision tower (models/layers/vision.h) unless
// --language-model-only.
#include "base/error.h"
#include "io/weight_names.h"
#include "models/layers/attention.h"
#include "models/layers/decoder.h"
#include "models/layers/gdn.h"
#include "models/layers/mlp.h"
#include "models/layers/vision.h"
#include "models/registry.h"

namespace vtllm::models {

std::unique_ptr<Model> build_qwen3_5(const io::ModelConfig& config, ParamSink& w,
                                     const ModelOptions& options, vt::DType dtype) {
  const io::TextConfig& t = config.text;
  VT_CHECK(!t.moe.has_value(), "qwen3_5: the MoE variant is not supported yet");
  VT_CHECK(t.linear_attention.has_value(), "qwen3_5: the config has no linear-attention dims");
  VT_CHECK(t.rope.rope_type == "default", "qwen3_5: rope_type '", t.rope.rope_type,
           "' is not supported yet (only 'default')");
  // The tower first: its parameters precede the language model's in the state dict.
  std::unique_ptr<VisionTower> tower;
  if (config.multimodal && !options.language_model_only)
    tower = std::make_unique<Qwen3_5VisionTower>(*config.vision, w, io::kVisionPrefix, dtype);
  const float eps = float(t.rms_norm_eps);
  const RopeSpec rope{.rotary_dim = t.rotary_dim(),
                      .theta = t.rope.rope_theta,
                      .mrope_section = t.rope.mrope_section};
  const AttentionDims attn{
      .hidden = t.hidden_size,
      .heads = t.num_attention_heads,
      .kv_heads = t.num_key_value_heads,
      .head_dim = t.head_dim,
      .output_gate = true,  // transformers ignores attn_output_gate: always gated
      .norm_kind = vt::RmsNormKind::kOnePlus,
      .eps = eps,
      .rope = rope,
  };
  DecoderStack stack(config, w, vt::RmsNormKind::kOnePlus, rope);
  for (int64_t i = 0; i < t.num_hidden_layers; ++i) {
    const std::string p = stack.layer_prefix(i);
    std::unique_ptr<Mixer> mixer;
    switch (t.layer_types[size_t(i)]) {
      case io::LayerType::kLinearAttention:
        mixer = std::make_unique<GatedDeltaNet>(*t.linear_attention, t.hidden_size, eps, w,
                                                p + "linear_attn.");
        break;
      case io::LayerType::kFullAttention:
        mixer =
            std::make_unique<FullAttention>(attn, w, p + "self_attn.", options.fuse_attn_preamble);
        break;
      default:
        VT_THROW("qwen3_5: layer ", i, " is ", io::layer_type_name(t.layer_types[size_t(i)]),
                 ", which qwen3_5 does not build");
    }
    stack.add_layer(w, std::move(mixer),
                    std::make_unique<SwiGluMlp>(t.hidden_size, t.intermediate_size, w, p + "mlp."));
  }
  auto model = std::make_unique<DecoderModel>(config, std::move(stack), w.device(), dtype);
  if (!tower) return model;
  return with_vision_tower(std::move(model), std::move(tower));
}

}  // namespace vtllm::models
