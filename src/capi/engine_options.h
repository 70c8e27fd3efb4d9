// The options_json of vtllm_engine_create read into engine::EngineArgs: the keys are
// `vtllm serve`'s model flags with underscores (apps/vtllm/model_setup.cpp reads the
// same flags from the command line), plus served_model_name.
#pragma once

#include <string>

#include "engine/engine_builder.h"

namespace vtllm::capi {

struct EngineOptions {
  engine::EngineArgs args;
  std::string served_model_name;  // the "model" requests may name; default: the directory
};

// Parses `options_json` (empty: the defaults) for the model in `dir`. Throws
// vtllm::Error naming the key of an unknown key or a bad value ("options_json:
// max_num_seqs: expected an integer, got \"x\"").
EngineOptions parse_engine_options(const std::string& dir, const std::string& options_json);

}  // namespace vtllm::capi
