// The parameters a model class holds, derived from its typed config alone.
//
// param_specs() lists every parameter of the transformers class named by
// `architectures[0]`, under the name it has in that class's state_dict
// ("model.language_model.layers.3.self_attn.q_proj.weight" for Qwen3.5
// ConditionalGeneration, "model.layers.3..." for the CausalLM classes), with
// its shape and the config's weight dtype. lm_head is left out when tied (it is
// the embedding). MoE experts are the fused 3-D tensors transformers holds
// (experts.gate_up_proj [E, 2I, H], experts.down_proj [E, H, I]).
//
// This one list drives `vtllm inspect` (counting without allocating), the
// checkpoint loader (what must be in the files) and dummy weights; the sum of its
// numel() equals transformers' sum(p.numel() for p in model.parameters()).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/config.h"
#include "vt/dtype.h"

namespace vtllm::io {

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  vt::DType dtype = vt::DType::kF32;

  int64_t numel() const;
};

struct ParamSpecOptions {
  // Leave out the vision tower of a multimodal class (`--language-model-only`).
  bool language_model_only = false;
};

std::vector<ParamSpec> param_specs(const ModelConfig& config, const ParamSpecOptions& options = {});

// "model.language_model." for the ConditionalGeneration classes, "model." otherwise.
std::string language_model_prefix(const ModelConfig& config);
// "model.visual." (multimodal classes only).
inline constexpr const char* kVisionPrefix = "model.visual.";

struct ParamTotals {
  int64_t tensors = 0;
  int64_t parameters = 0;
  std::map<vt::DType, uint64_t> bytes;  // weight bytes per dtype
};
ParamTotals param_totals(const std::vector<ParamSpec>& specs);

}  // namespace vtllm::io
