// What `vtllm serve` and `vtllm generate` share: the model, tokenizer and chat
// template of a model directory, and the engine configuration built from the
// flags both accept (kModelFlagsUsage lists them).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "engine/llm_engine.h"
#include "engine/model_runner.h"
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

struct ModelFlags {
  std::string dir;
  io::LoadFormat load_format = io::LoadFormat::kAuto;
  // Text only: multimodal requests are refused. The loader builds no vision tower
  // yet, so a *ForConditionalGeneration model is text-only either way.
  bool language_model_only = false;
  int64_t max_model_len = 0;  // 0: the model's max_position_embeddings
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 2048;
  std::optional<int64_t> num_blocks_override;  // KV blocks (excluding the null block)
  bool enable_prefix_caching = true;
  std::string chat_template_file;  // replaces DIR's template when not empty
  // --device: the CPU (f32), or cuda:0 (bf16, KV blocks sized from memory); auto (the
  // default) picks cuda:0 when a GPU is visible.
  vt::Device device = vt::Device::cpu();
  double gpu_memory_utilization = 0.9;  // CUDA only; --num-gpu-blocks-override wins
  // --enforce-eager: no CUDA graphs (vLLM's flag); by default decode-only steps of up to
  // min(max_num_seqs, 64) requests and min(max_model_len, 16384) tokens of context replay
  // graphs (engine::GraphOptions).
  bool enforce_eager = false;
};

// The runner's graph options for these flags (CUDA graphs on unless --enforce-eager).
engine::GraphOptions graph_options(const ModelFlags& flags, int64_t max_model_len);

// Reads the shared flags (validated, the error naming the flag); `max_num_seqs`
// is the subcommand's default for --max-num-seqs.
ModelFlags model_flags_from_args(const Args& args, const std::string& dir,
                                 int64_t default_max_num_seqs);

struct ModelSetup {
  io::ModelConfig model_config;
  engine::EngineConfig engine;  // scheduler, KV cache, eos ids (config + generation_config)
  // DIR's tokenizer.json; absent when the directory has none (then only token ids work).
  std::optional<text::Tokenizer> tokenizer;
  std::string tokenizer_error;                // why it is absent
  std::optional<ChatTemplate> chat_template;  // absent when DIR has none (no error)
  std::string chat_template_error;            // why it is absent
  std::unique_ptr<engine::ModelRunner> runner;
  bool hybrid = false;      // GDN layers: one state slot per running request
  bool multimodal = false;  // a vision-language class (served text-only)
};

// Loads config, tokenizer, chat template (an explicit --chat-template must
// load) and the model with options.load_format on options.device. The KV cache:
// --num-gpu-blocks-override when given; else on the CPU enough blocks for
// min(max_num_seqs, 16) full-length requests, on CUDA what
// gpu_memory_utilization leaves (ModelRunner::load_sized, which prints its
// cache-sizing line to stderr); engine.kv_cache is the runner's.
ModelSetup load_model_setup(const ModelFlags& options);

// A one-line description: "<arch>, hybrid|dense[, dummy weights][, text only]".
std::string describe(const ModelSetup& setup, const ModelFlags& options);

}  // namespace vtllm::cli
