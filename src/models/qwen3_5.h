// The Qwen3.5 / Qwen3.6 hybrid decoder that the dense (qwen3_5.cpp) and the MoE
// (qwen3_5_moe.cpp) architecture files share: GDN and gated full attention as
// layer_types says, (1 + w) RMSNorms, partial interleaved-MRoPE rotary; the
// feed-forward of each layer comes from the caller.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "models/layers/blocks.h"
#include "models/registry.h"

namespace vtllm::models {

// Builds the feed-forward of one layer from the parameters under `prefix` ("model.layers.3.mlp.").
using FeedForwardBuilder =
    std::function<std::unique_ptr<FeedForward>(ParamSink& w, const std::string& prefix)>;

// The Qwen3.5 decoder of `config` (a ModelBuilder's arguments) with `ffn` per layer.
// `arch` labels errors ("qwen3_5", "qwen3_5_moe").
std::unique_ptr<Model> build_qwen3_5_decoder(const io::ModelConfig& config, ParamSink& w,
                                             const ModelOptions& options, vt::DType dtype,
                                             const char* arch, const FeedForwardBuilder& ffn);

}  // namespace vtllm::models
