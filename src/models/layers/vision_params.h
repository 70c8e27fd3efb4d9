// The parameters of the Qwen3.5 vision tower (qwen3_5.md §3.2, §12), taken from a sink
// under `prefix` ("model.visual."): patch embedding (Conv3d weight and bias), learned
// position embedding, `depth` pre-norm blocks (LayerNorm weights and biases, fused qkv,
// proj, fc1, fc2, each with a bias) and the patch merger. The tower's compute is not
// built yet: the registry declares these for `vtllm inspect` (counts equal to
// transformers') and loads the language model only.
#pragma once

#include <string>

#include "io/config.h"
#include "models/params.h"

namespace vtllm::models {

void take_vision_tower_params(ParamSink& w, const std::string& prefix, const io::VisionConfig& v);

}  // namespace vtllm::models
