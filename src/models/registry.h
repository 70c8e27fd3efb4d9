// The model registry: HF `architectures[0]` -> the builder of that class.
//
// load_model(config, dir, s, load) builds the model of `config` on load.device (the
// stream `s` must be on it) with load.activation_dtype(), its weights read from the
// checkpoint in `dir` by the io loader in their checkpoint dtype, or made as dummy
// weights from the config alone (load.format == kDummy; `dir` then only names the
// model in messages). The overload without a config reads DIR/config.json. Vision
// towers of *ForConditionalGeneration classes are not built yet (text part only). An
// unknown class is an error listing the supported ones.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/model.h"

namespace vtllm::models {

std::unique_ptr<Model> load_model(const io::ModelConfig& config, const std::string& dir,
                                  vt::Stream& s, const LoadConfig& load,
                                  const ModelOptions& options = ModelOptions::from_env());
std::unique_ptr<Model> load_model(const std::string& dir, vt::Stream& s,
                                  const LoadConfig& load = {},
                                  const ModelOptions& options = ModelOptions::from_env());

// The `architectures[0]` names load_model accepts, sorted.
std::vector<std::string> supported_architectures();

}  // namespace vtllm::models
