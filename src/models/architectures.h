// The architecture builders the registry maps `architectures[0]` to. Each one reads
// its family's config into a DecoderSpec and builds the stack (one file per family)
// on the device of `weights`, computing in the activation dtype `dtype`.
#pragma once

#include <memory>

#include "models/layers/weights.h"
#include "models/model.h"

namespace vtllm::models {

// Qwen3ForCausalLM: dense Qwen3 (plain RMSNorm weights, q/k-norm, full rotary).
std::unique_ptr<Model> build_qwen3(const io::ModelConfig& config, WeightStore& weights,
                                   const ModelOptions& options, vt::DType dtype);
// Qwen3_5ForCausalLM and the text model of Qwen3_5ForConditionalGeneration: GDN layers
// and gated full attention, (1 + w) norms, partial interleaved-MRoPE rotary.
std::unique_ptr<Model> build_qwen3_5(const io::ModelConfig& config, WeightStore& weights,
                                     const ModelOptions& options, vt::DType dtype);

}  // namespace vtllm::models
