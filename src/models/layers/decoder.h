// DecoderModel: the pre-norm decoder stack every architecture here is made of.
//
//   x = embed_tokens[ids]
//   per layer: x += mixer(norm(x));  x += mlp(norm(x))     (mixer: FullAttention or GDN)
//   hidden = norm(x);  logits = hidden . lm_head^T          (lm_head = embed_tokens when tied)
//
// Everything runs in the model's activation dtype on the weights' device (model.h):
// f32 on the CPU (as the f32 oracle), bf16 on CUDA, where the residual stream, every
// projection and the logits round to bf16 as the bf16 oracle's do.
// An architecture file fills a DecoderSpec from its config and calls build_decoder.
#pragma once

#include <memory>
#include <vector>

#include "models/layers/attention.h"
#include "models/layers/weights.h"
#include "models/model.h"

namespace vtllm::models {

struct DecoderSpec {
  vt::RmsNormKind norm_kind = vt::RmsNormKind::kPlain;  // layer norms, final norm, q/k norms
  AttentionDims attention;                               // for the full-attention layers
  bool uses_rope = true;
};

// Builds the stack from `config` (layer_types picks FullAttention or GatedDeltaNet per
// layer) with the weights of `weights` (on their device), and checks that every
// parameter was used. `dtype`: the activation dtype (f32, bf16 or f16).
std::unique_ptr<Model> build_decoder(const io::ModelConfig& config, const DecoderSpec& spec,
                                     WeightStore& weights, const ModelOptions& options,
                                     vt::DType dtype);

}  // namespace vtllm::models
