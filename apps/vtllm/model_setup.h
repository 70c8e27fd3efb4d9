// The model flags `vtllm serve` and `vtllm generate` share (kModelFlagsUsage lists
// them), read into engine::EngineArgs; engine::build_engine makes the engine parts.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "engine/engine_builder.h"
#include "io/config.h"
#include "io/weight_loader.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "vt/device.h"

namespace vtllm::cli {

// The flags read by model_flags_from_args: value flags, then boolean flags.
std::vector<std::string> model_value_flags();
std::vector<std::string> model_bool_flags();
extern const char* const kModelFlagsUsage;

// Reads the shared flags (validated, the error naming the flag); `default_max_num_seqs`
// is the subcommand's default for --max-num-seqs.
engine::EngineArgs model_flags_from_args(const Args& args, const std::string& dir,
                                         int64_t default_max_num_seqs);

}  // namespace vtllm::cli
