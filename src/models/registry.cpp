#include "models/registry.h"

#include <map>

#include "base/error.h"
#include "models/architectures.h"

namespace vtllm::models {

namespace {
using Builder = std::unique_ptr<Model> (*)(const io::ModelConfig&, WeightStore&,
                                           const ModelOptions&, vt::DType);

const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> m = {
      {"Qwen3ForCausalLM", &build_qwen3},
      {"Qwen3_5ForCausalLM", &build_qwen3_5},
      {"Qwen3_5ForConditionalGeneration", &build_qwen3_5},  // text part; vision not built yet
  };
  return m;
}
}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> names;
  for (const auto& [name, builder] : builders()) names.push_back(name);
  return names;
}

std::unique_ptr<Model> load_model(const io::ModelConfig& config, const std::string& dir,
                                  vt::Stream& s, const LoadConfig& load,
                                  const ModelOptions& options) {
  auto it = builders().find(config.architecture_class);
  if (it == builders().end()) {
    std::string list;
    for (const std::string& n : supported_architectures()) list += (list.empty() ? "" : ", ") + n;
    VT_THROW(dir, "/config.json: architecture '", config.architecture_class,
             "' has no model builder (supported: ", list, ")");
  }
  VT_CHECK(s.device() == load.device, dir, ": a model on ", load.device.str(),
           " needs a stream there, got one on ", s.device().str());
  io::LoadOptions io_options;
  io_options.device = load.device;
  io_options.format = load.format;
  io_options.dummy_seed = load.dummy_seed;
  io_options.progress = load.progress;
  WeightStore weights(config, dir, s, io_options);
  return it->second(config, weights, options, load.activation_dtype());
}

std::unique_ptr<Model> load_model(const std::string& dir, vt::Stream& s, const LoadConfig& load,
                                  const ModelOptions& options) {
  return load_model(io::load_model_config(dir), dir, s, load, options);
}

}  // namespace vtllm::models
