// EngineArgs -> the parts of an engine: what `vtllm serve`, `vtllm generate`, `vtllm
// bench throughput` and the C API share to build one (vLLM's EngineArgs; the fields
// are the CLI flags of the same names, apps/vtllm/model_setup.h).
//
// build_engine reads DIR's config.json (models/registry.h), generation_config.json,
// tokenizer and chat template, and loads the model on args.device: on the CPU with
// f32 activations and a KV cache of num_gpu_blocks_override blocks (default: enough
// for min(max_num_seqs, 16) full-length requests), refused before allocating when it
// and the GDN state slots exceed 90% of the memory the system has available; on CUDA in bf16 with the cache
// sized from gpu_memory_utilization (ModelRunner::load_sized, which logs its plan
// unless quiet) unless num_gpu_blocks_override is given, and CUDA graphs for decode
// steps of up to min(max_num_seqs, 64) requests unless enforce_eager.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/llm_engine.h"
#include "engine/model_runner.h"
#include "io/config.h"
#include "io/weight_loader.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "vt/device.h"

namespace vtllm::engine {

struct EngineArgs {
  std::string dir;  // the model directory
  io::LoadFormat load_format = io::LoadFormat::kAuto;
  uint64_t dummy_seed = 0;  // --load-format dummy
  // Text only: multimodal requests are refused (the runner drops its vision encoder).
  bool language_model_only = false;
  int64_t max_model_len = 0;  // 0: the model's max_position_embeddings
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 2048;
  std::optional<int64_t> num_gpu_blocks_override;  // KV blocks (excluding the null block)
  bool enable_prefix_caching = true;
  bool jump_forward = false;  // EngineConfig::jump_forward (--jump-forward)
  // Hybrid prefix caching: the GDN state snapshots' memory, state_snapshot_bytes when
  // set, else this share of the cache memory (KV blocks + snapshots when the blocks are
  // given: CPU, or --num-gpu-blocks-override; else of what the CUDA cache plan leaves
  // for KV blocks and snapshots after weights, activations and graphs). At least one
  // snapshot unless 0.
  double state_snapshot_fraction = 0.1;
  std::optional<uint64_t> state_snapshot_bytes;
  int64_t state_snapshot_stride = 1024;  // prompt tokens between snapshots; 0: none
  std::string chat_template_file;  // replaces DIR's template when not empty
  // vLLM's --generation-config: where default sampling parameters come from. "auto":
  // DIR/generation_config.json; "vllm": none (vLLM's own defaults); otherwise a folder
  // holding a generation_config.json. override_generation_config: a JSON object of
  // generation_config.json fields laid over it (--override-generation-config).
  std::string generation_config = "auto";
  std::string override_generation_config;
  vt::Device device = vt::Device::cpu();
  double gpu_memory_utilization = 0.9;  // CUDA only; num_gpu_blocks_override wins
  bool enforce_eager = false;           // no CUDA graphs
  bool quiet = false;                   // no cache-plan line on stderr
  // A max_model_len above the model's max_position_embeddings is refused unless set
  // (vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN).
  bool allow_long_max_model_len = false;
  io::LoadOptions::Progress progress = io::LoadOptions::Progress::kAuto;

  // Throws vtllm::Error naming the flag (--max-num-seqs, ...) of the first bad value.
  void validate() const;
};

struct EngineParts {
  io::ModelConfig model_config;
  EngineConfig engine;  // scheduler, KV cache (the runner's), eos ids
  // DIR's tokenizer.json; absent when the directory has none (then only token ids work).
  std::optional<text::Tokenizer> tokenizer;
  std::string tokenizer_error;                // why it is absent
  std::optional<ChatTemplate> chat_template;  // absent when DIR has none
  std::string chat_template_error;            // why it is absent
  // The sampling defaults' source chosen by --generation-config (+ its override); the
  // server applies its fields to requests that leave them out.
  io::GenerationConfig generation_config;
  std::unique_ptr<ModelRunner> runner;
  bool hybrid = false;      // GDN layers: one state slot per running request
  bool multimodal = false;  // a vision-language class
  bool vision = false;  // the runner encodes images and videos (a tower, not --language-model-only)

  // "<arch>, hybrid|dense[, dummy weights][, bf16 on cuda:0][, text only ...]".
  std::string describe(const EngineArgs& args) const;
};

// Validates `args` and builds the parts (an explicit chat_template_file must load).
EngineParts build_engine(const EngineArgs& args);

// The generation config --generation-config / --override-generation-config select
// (see EngineArgs); throws naming the flag when the folder or the JSON is bad.
io::GenerationConfig sampling_generation_config(const EngineArgs& args);

// The GDN state snapshots build_engine gives a model whose state slots take
// bytes_per_state_slot bytes each (0: dense), for a KV cache of kv_bytes under args'
// budget. kv_bytes 0 (sized from the device): only state_snapshot_bytes counts here;
// a fraction is left to the cache plan (KvCacheConfig::snapshot_fraction).
int32_t num_state_snapshots(const EngineArgs& args, int64_t bytes_per_state_slot,
                            uint64_t kv_bytes);

// --device auto|cpu|cuda|cuda:N (the serve flag and the C API option): auto is cuda:0
// when a GPU is visible, else the CPU; others as vt::device_from_name. Errors name `what`.
vt::Device resolve_device(const std::string& name, const std::string& what);

// MemAvailable of /proc/meminfo in bytes (0 when it cannot be read).
uint64_t host_memory_available();

// The decode-graph options build_engine gives the runner.
GraphOptions graph_options(const EngineArgs& args, int64_t max_model_len);

}  // namespace vtllm::engine
