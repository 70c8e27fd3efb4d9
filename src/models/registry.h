// The model registry: HF `architectures[0]` -> the builder of that class.
//
// load_model(dir) reads DIR/config.json, opens the checkpoint and builds the model on
// the CPU with f32 weights. Vision towers of *ForConditionalGeneration classes are not
// built yet (text part only). An unknown class is an error listing the supported ones.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/model.h"

namespace vtllm::models {

std::unique_ptr<Model> load_model(const std::string& dir, vt::Stream& s,
                                  const ModelOptions& options = ModelOptions::from_env());

// The `architectures[0]` names load_model accepts, sorted.
std::vector<std::string> supported_architectures();

}  // namespace vtllm::models
