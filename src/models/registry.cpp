#include "models/registry.h"

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "base/file.h"
#include "io/weight_names.h"
#include "models/layers/weights.h"

namespace vtllm::models {

// The architecture files' builders (models/<arch>.cpp).
ModelBuilder build_qwen3, build_qwen3_5;

const std::vector<ArchitectureEntry>& architectures() {
  static const std::vector<ArchitectureEntry> table = [] {
    std::vector<ArchitectureEntry> t = {
        {{"Qwen3ForCausalLM", false, {"qwen3"}}, &build_qwen3},
        {{"Qwen3_5ForCausalLM", false, {"qwen3_5_text", "qwen3_5"}}, &build_qwen3_5},
        {{"Qwen3_5ForConditionalGeneration", true, {"qwen3_5"}}, &build_qwen3_5},
    };
    std::sort(t.begin(), t.end(), [](const ArchitectureEntry& a, const ArchitectureEntry& b) {
      return a.config_class.name < b.config_class.name;
    });
    return t;
  }();
  return table;
}

std::vector<std::string> supported_architectures() {
  std::vector<std::string> names;
  for (const ArchitectureEntry& e : architectures()) names.push_back(e.config_class.name);
  return names;
}

namespace {

// `where` labels the error: a named string (a temporary would make g++ 13 warn that
// the returned reference may dangle).
const ArchitectureEntry& entry_for(const std::string& cls, const std::string& where) {
  for (const ArchitectureEntry& e : architectures())
    if (e.config_class.name == cls) return e;
  std::string list;
  for (const std::string& n : supported_architectures()) list += (list.empty() ? "" : ", ") + n;
  VT_THROW(where, ": architectures: unknown architecture '", cls, "' (supported: ", list, ")");
}

}  // namespace

io::ModelConfig parse_model_config(const std::string& json_text, const std::string& file_name) {
  const std::string cls = io::architecture_class(json_text, file_name);
  const ArchitectureEntry& e = entry_for(cls, file_name);
  return io::parse_model_config(json_text, file_name, e.config_class);
}

io::ModelConfig load_model_config(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  return parse_model_config(read_file(path), path);
}

std::vector<io::ParamSpec> declare_params(const io::ModelConfig& config, bool language_model_only) {
  const std::string where = "model config";
  const ArchitectureEntry& e = entry_for(config.architecture_class, where);
  ParamDeclaration decl(config.dtype);
  ModelOptions options;
  options.language_model_only = language_model_only;
  e.build(config, decl, options, vt::DType::kF32);
  return decl.specs();
}

CacheSpec declare_cache_spec(const io::ModelConfig& config) {
  const std::string where = "model config";
  const ArchitectureEntry& e = entry_for(config.architecture_class, where);
  ParamDeclaration decl(config.dtype);
  ModelOptions options;
  options.language_model_only = true;  // the cache is the language model's
  return e.build(config, decl, options, vt::DType::kF32)->cache_spec();
}

std::unique_ptr<Model> load_model(const io::ModelConfig& config, const std::string& dir,
                                  vt::Stream& s, const LoadConfig& load,
                                  const ModelOptions& options) {
  const std::string where = dir + "/config.json";
  const ArchitectureEntry& e = entry_for(config.architecture_class, where);
  VT_CHECK(s.device() == load.device, dir, ": a model on ", load.device.str(),
           " needs a stream there, got one on ", s.device().str());
  io::LoadOptions io_options;
  io_options.device = load.device;
  io_options.format = load.format;
  io_options.dummy_seed = load.dummy_seed;
  io_options.progress = load.progress;
  io_options.language_model_only = options.language_model_only;
  const std::vector<io::ParamSpec> specs = declare_params(config, options.language_model_only);
  WeightStore weights(io::load_model_weights(s, dir, config, specs, io_options),
                      load.format == io::LoadFormat::kDummy ? dir + " (dummy weights)" : dir, s);
  std::unique_ptr<Model> model = e.build(config, weights, options, load.activation_dtype());
  weights.check_all_used();
  return model;
}

std::unique_ptr<Model> load_model(const std::string& dir, vt::Stream& s, const LoadConfig& load,
                                  const ModelOptions& options) {
  return load_model(load_model_config(dir), dir, s, load, options);
}

}  // namespace vtllm::models
