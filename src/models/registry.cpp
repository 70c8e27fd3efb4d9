#include "models/registry.h"

#include <map>

#include "base/error.h"
#include "models/architectures.h"

namespace vtllm::models {

namespace {
using Builder = std::unique_ptr<Model> (*)(const io::ModelConfig&, WeightStore&,
                                           const ModelOptions&);

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

std::unique_ptr<Model> load_model(const std::string& dir, vt::Stream& s,
                                  const ModelOptions& options) {
  const io::ModelConfig config = io::load_model_config(dir);
  auto it = builders().find(config.architecture_class);
  if (it == builders().end()) {
    std::string list;
    for (const std::string& n : supported_architectures()) list += (list.empty() ? "" : ", ") + n;
    VT_THROW(dir, "/config.json: architecture '", config.architecture_class,
             "' has no model builder (supported: ", list, ")");
  }
  WeightStore weights(config, dir, s);
  return it->second(config, weights, options);
}

}  // namespace vtllm::models
