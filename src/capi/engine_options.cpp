#include "capi/engine_options.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json.h"
#include "vt/device.h"

namespace vtllm::capi {

namespace {

constexpr const char* kKeys[] = {"device",
                                 "load_format",
                                 "max_model_len",
                                 "max_num_seqs",
                                 "max_num_batched_tokens",
                                 "num_gpu_blocks_override",
                                 "gpu_memory_utilization",
                                 "enable_prefix_caching",
                                 "enforce_eager",
                                 "language_model_only",
                                 "chat_template",
                                 "generation_config",
                                 "override_generation_config",
                                 "served_model_name"};

}  // namespace

EngineOptions parse_engine_options(const std::string& dir, const std::string& options_json) {
  EngineOptions o;
  engine::EngineArgs& a = o.args;
  a.dir = dir;
  o.served_model_name = dir;
  a.quiet = true;  // a library prints no cache plan
  a.progress = io::LoadOptions::Progress::kNever;
  std::string device = "auto";
  if (!options_json.empty()) {
    const Json j = json_parse(options_json, "options_json");
    const JsonFields f(j, JsonPath("options_json"));
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (std::find(std::begin(kKeys), std::end(kKeys), it.key()) == std::end(kKeys)) {
        std::string known;
        for (const char* k : kKeys) known += str_cat(known.empty() ? "" : ", ", k);
        VT_THROW("options_json: unknown key '", it.key(), "' (known: ", known, ")");
      }
    }
    device = f.get_string("device", device);
    if (auto v = f.opt_string("load_format")) a.load_format = io::load_format_from_name(*v, "options_json: load_format");
    if (auto v = f.opt_int("max_model_len", 1)) a.max_model_len = *v;
    a.max_num_seqs = f.get_int("max_num_seqs", a.max_num_seqs);
    a.max_num_batched_tokens = f.get_int("max_num_batched_tokens", a.max_num_batched_tokens);
    if (auto v = f.opt_int("num_gpu_blocks_override")) a.num_gpu_blocks_override = *v;
    a.gpu_memory_utilization = f.get_double("gpu_memory_utilization", a.gpu_memory_utilization);
    a.enable_prefix_caching = f.get_bool("enable_prefix_caching", a.enable_prefix_caching);
    a.enforce_eager = f.get_bool("enforce_eager", a.enforce_eager);
    a.language_model_only = f.get_bool("language_model_only", a.language_model_only);
    a.chat_template_file = f.get_string("chat_template", "");
    a.generation_config = f.get_string("generation_config", a.generation_config);
    if (const Json* v = f.find("override_generation_config")) {
      VT_REQUIRE(v->is_object(), "options_json: override_generation_config must be an object");
      a.override_generation_config = v->dump();
    }
    o.served_model_name = f.get_string("served_model_name", o.served_model_name);
  }
  a.device = engine::resolve_device(device, "options_json: device:");
  a.validate();
  return o;
}

}  // namespace vtllm::capi
