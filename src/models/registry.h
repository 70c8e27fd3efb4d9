// The model registry: one table, keyed by the Hugging Face class name
// (`architectures[0]`), of every model class vtllm builds (registry.cpp). An entry
// says whether the class is multimodal, which config `model_type`s it accepts, and
// which architecture file builds it. Adding an architecture is one file
// (models/<arch>.cpp defining its ModelBuilder) plus one line of that table.
//
// A ModelBuilder builds the model of `config` from the parameters it takes from a
// ParamSink (models/params.h), computing in the activation dtype `dtype` on the
// sink's device. The same builder declares the parameters (on a ParamDeclaration:
// declare_params) and builds the model from loaded weights (load_model).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/config.h"
#include "io/weight_loader.h"
#include "models/model.h"
#include "models/params.h"

namespace vtllm::models {

using ModelBuilder = std::unique_ptr<Model>(const io::ModelConfig& config, ParamSink& weights,
                                            const ModelOptions& options, vt::DType dtype);

struct ArchitectureEntry {
  io::ConfigClass config_class;  // HF class name, multimodal, accepted model_types
  ModelBuilder* build = nullptr;
};

// The table, sorted by class name.
const std::vector<ArchitectureEntry>& architectures();
// The `architectures[0]` names the registry builds, sorted.
std::vector<std::string> supported_architectures();

// config.json text as the class its `architectures[0]` names (an unknown class is an
// error listing the supported ones); `file_name` labels errors.
io::ModelConfig parse_model_config(const std::string& json_text, const std::string& file_name);
// Reads DIR/config.json.
io::ModelConfig load_model_config(const std::string& dir);

// Every parameter of the class in its state-dict order of declaration, with the
// config's weight dtype: the language model's, and a multimodal class's vision tower
// unless `language_model_only`. lm_head is left out when tied. The sum of numel()
// equals transformers' sum(p.numel() for p in model.parameters()).
std::vector<io::ParamSpec> declare_params(const io::ModelConfig& config,
                                          bool language_model_only = false);

// The per-layer cache kinds and dimensions of the class (Model::cache_spec), from the
// config alone (no weights): how the engine sizes a cache before loading.
CacheSpec declare_cache_spec(const io::ModelConfig& config);

// Builds the model of `config` on load.device (the stream `s` must be on it) with
// load.activation_dtype(), its declared language-model parameters read from the
// checkpoint in `dir` by the io loader in their checkpoint dtype, or made as dummy
// weights from the config alone (load.format == kDummy; `dir` then only names the
// model in messages). A multimodal class gets its vision tower (Model::vision_tower())
// unless options.language_model_only. The overload without a config reads DIR/config.json.
std::unique_ptr<Model> load_model(const io::ModelConfig& config, const std::string& dir,
                                  vt::Stream& s, const LoadConfig& load,
                                  const ModelOptions& options = ModelOptions::from_env());
std::unique_ptr<Model> load_model(const std::string& dir, vt::Stream& s,
                                  const LoadConfig& load = {},
                                  const ModelOptions& options = ModelOptions::from_env());

}  // namespace vtllm::models
