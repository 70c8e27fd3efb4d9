// DecoderModel: the pre-norm decoder stack every architecture here is made of, run
// over the blocks an architecture file wires (models/<arch>.cpp).
//
//   x = embed_tokens[ids]   (rows given as input embeddings are replaced)
//   per layer: x += mixer(norm(x));  x += ffn(norm(x))
//   hidden = norm(x);  logits = hidden . lm_head^T          (lm_head = embed_tokens when tied)
//
// Everything runs in the model's activation dtype on the weights' device (model.h):
// f32 on the CPU (as the f32 oracle), bf16 on CUDA, where the residual stream, every
// projection and the logits round to bf16 as the bf16 oracle's do. Each residual add
// is fused with the norm that reads its result (vt::add_rms_norm).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/layers/blocks.h"
#include "models/model.h"
#include "models/params.h"
#include "vt/ops/norm.h"

namespace vtllm::models {

// What an architecture file builds: the embedding, the final norm, lm_head and the
// layers (their two norms taken here, the mixer and FFN by the architecture).
class DecoderStack {
 public:
  // Takes `embed_tokens`, `norm` and (untied) `lm_head` from `w`, under the class's
  // language-model prefix (io::language_model_prefix). `rope`: the full-attention
  // layers' rotary (nullopt: none).
  DecoderStack(const io::ModelConfig& config, ParamSink& w, vt::RmsNormKind norm_kind,
               std::optional<RopeSpec> rope);

  // The state-dict prefix of layer i ("model.layers.3.").
  std::string layer_prefix(int64_t i) const;
  // Appends the next layer: takes its input_layernorm and post_attention_layernorm.
  void add_layer(ParamSink& w, std::unique_ptr<Mixer> mixer, std::unique_ptr<FeedForward> ffn);

 private:
  friend class DecoderModel;
  struct Layer {
    vt::Tensor input_norm, post_norm;
    std::unique_ptr<Mixer> mixer;
    std::unique_ptr<FeedForward> ffn;
  };
  std::string prefix_;
  int64_t hidden_;
  vt::RmsNormKind norm_kind_;
  std::optional<RopeSpec> rope_;
  vt::Tensor embed_, lm_head_, norm_;
  std::vector<Layer> layers_;
};

class DecoderModel final : public Model {
 public:
  // `dtype`: the activation dtype (f32, bf16 or f16); `device`: the weights'.
  DecoderModel(const io::ModelConfig& config, DecoderStack stack, vt::Device device,
               vt::DType dtype);

  const io::ModelConfig& config() const override { return config_; }
  const CacheSpec& cache_spec() const override { return cache_spec_; }
  vt::Device device() const override { return device_; }
  vt::DType dtype() const override { return dtype_; }

  vt::Tensor forward(vt::Stream& s, const ForwardBatch& batch, CacheView& cache,
                     const InputEmbeddings* embeds) override;
  BatchInputs prepare(vt::Stream& s, const ForwardBatch& batch, CacheView& cache,
                      const StepLayout* layout, const vt::Tensor* into) override;
  int64_t packed_input_bytes(const StepLayout& layout) const override;
  vt::Tensor forward_prepared(vt::Stream& s, const BatchInputs& in, CacheView& cache,
                              const InputEmbeddings* embeds) override;
  vt::Tensor compute_logits(vt::Stream& s, const vt::Tensor& hidden,
                            const std::vector<int32_t>& rows) override;

 private:
  const RopeSpec* rope() const { return stack_.rope_ ? &*stack_.rope_ : nullptr; }
  void check_stream(const vt::Stream& s, const char* what) const;

  io::ModelConfig config_;
  DecoderStack stack_;
  vt::Device device_;
  vt::DType dtype_;
  CacheSpec cache_spec_;
  bool has_gdn_ = false;
};

}  // namespace vtllm::models
