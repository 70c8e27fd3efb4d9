// The model classes the io tests parse configs as: the typed-config parser takes its
// class from the models registry in the engine; io's tests cannot link models, so a
// fixed table stands in for it (the registry's classes, plus Llama, whose configs io
// reads though no model file builds it).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/file.h"
#include "io/config.h"

namespace vtllm::io::testing {

inline const std::vector<ConfigClass>& config_classes() {
  static const std::vector<ConfigClass> t = {
      {"LlamaForCausalLM", false, {"llama"}},
      {"Qwen3ForCausalLM", false, {"qwen3"}},
      {"Qwen3_5ForCausalLM", false, {"qwen3_5_text", "qwen3_5"}},
      {"Qwen3_5ForConditionalGeneration", true, {"qwen3_5"}},
      {"Qwen3_5MoeForCausalLM", false, {"qwen3_5_moe_text", "qwen3_5_moe"}},
      {"Qwen3_5MoeForConditionalGeneration", true, {"qwen3_5_moe"}},
  };
  return t;
}

// parse_model_config as the class architectures[0] names (unknown: an error).
inline ModelConfig parse_config(const std::string& text, const std::string& file = "config.json") {
  const std::string cls = architecture_class(text, file);
  for (const ConfigClass& c : config_classes())
    if (c.name == cls) return parse_model_config(text, file, c);
  VT_THROW(file, ": architectures: unknown architecture '", cls, "'");
}

inline ModelConfig load_config(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  return parse_config(read_file(path), path);
}

}  // namespace vtllm::io::testing
