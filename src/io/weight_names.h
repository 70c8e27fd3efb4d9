// How a checkpoint tensor name maps onto the parameter names a model declares.
//
// transformers writes the same weights under different spellings depending on the
// class that saved them; this is the one place that knows them all:
//   - `model.language_model.X` (ConditionalGeneration) and `model.X` (CausalLM) are
//     the same language-model tensor; either loads into either class.
//   - `mtp.*` (the multi-token-prediction draft head) is skipped: transformers
//     drops it at load (qwen3_5.md §3.3, §11).
//   - `model.visual.*` is skipped for a CausalLM class (transformers ignores it)
//     and for `--language-model-only`.
//   - `lm_head.weight` is skipped when embeddings are tied (the embedding is used).
//   - `...mlp.experts.{e}.{gate,up,down}_proj.weight` are per-expert pieces of the
//     fused `experts.gate_up_proj` [E, 2I, H] / `experts.down_proj` [E, H, I]
//     (gate rows first, then up; qwen3_5.md §3.1).
#pragma once

#include <cstdint>
#include <string>

#include "io/config.h"

namespace vtllm::io {

struct WeightName {
  enum class Kind { kParam, kExpertPart, kSkip };
  enum class ExpertPart { kGate, kUp, kDown };

  Kind kind = Kind::kParam;
  std::string param;   // kParam / kExpertPart: the parameter name it fills
  std::string reason;  // kSkip: why (for the load summary)
  int64_t expert = -1;  // kExpertPart
  ExpertPart part = ExpertPart::kGate;
};

// "model.language_model." for the ConditionalGeneration classes, "model." otherwise:
// where a class keeps its language model's parameters.
std::string language_model_prefix(const ModelConfig& config);
// Where the vision tower's parameters live (multimodal classes only).
inline constexpr const char* kVisionPrefix = "model.visual.";

// Maps one checkpoint tensor name. `language_model_only`: the vision tower is not loaded.
WeightName map_weight_name(const std::string& checkpoint_name, const ModelConfig& config,
                           bool language_model_only);

}  // namespace vtllm::io
