#include "model_setup.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "base/error.h"
#include "vt/device.h"

namespace vtllm::cli {

std::vector<std::string> model_value_flags() {
  return {"load-format",
          "max-model-len",
          "max-num-seqs",
          "max-num-batched-tokens",
          "num-gpu-blocks-override",
          "chat-template",
          "generation-config",
          "override-generation-config",
          "device",
          "gpu-memory-utilization",
          "state-snapshot-budget",
          "state-snapshot-stride"};
}

std::vector<std::string> model_bool_flags() {
  return {"language-model-only", "enable-prefix-caching", "no-enable-prefix-caching",
          "enforce-eager", "jump-forward"};
}

const char* const kModelFlagsUsage =
    "  --load-format auto|dummy      weights from DIR's safetensors (auto), or deterministic "
    "random\n"
    "                                weights of config.json's shapes (dummy; no weight files "
    "read)\n"
    "  --language-model-only         text only: image and video inputs are refused (the "
    "vision\n"
    "                                encoder is not used)\n"
    "  --max-model-len N             context length (default: the model's "
    "max_position_embeddings)\n"
    "  --max-num-seqs N              requests in one batch\n"
    "  --max-num-batched-tokens N    tokens in one step (default 2048)\n"
    "  --device auto|cpu|cuda        where the model runs (default auto: cuda when a GPU is\n"
    "                                visible, else cpu); cpu: f32; cuda: bf16 on cuda:0\n"
    "  --gpu-memory-utilization F    cuda: fraction of GPU memory for weights, activations and\n"
    "                                KV cache, (0, 1] (default 0.9)\n"
    "  --num-gpu-blocks-override N   KV-cache blocks of 16 tokens (default on CPU: enough for\n"
    "                                min(max-num-seqs, 16) full-length requests; on cuda: from\n"
    "                                --gpu-memory-utilization)\n"
    "  --enable-prefix-caching       reuse cached prompt blocks (default; hybrid models through\n"
    "                                GDN state snapshots)\n"
    "  --no-enable-prefix-caching    do not\n"
    "  --jump-forward                append a grammar's forced run of tokens at once, computed\n"
    "                                in one step (default: sampled one step each, as vLLM)\n"
    "  --state-snapshot-budget B     hybrid: memory for GDN state snapshots, a fraction of the\n"
    "                                cache memory (default 0.1) or bytes (8GiB, 512MiB, 4096)\n"
    "  --state-snapshot-stride N     hybrid: also snapshot every N prompt tokens, a multiple of\n"
    "                                16 (default 1024; 0: only at each prompt's end)\n"
    "  --chat-template FILE          a Jinja chat template replacing DIR's\n"
    "  --generation-config auto|vllm|DIR\n"
    "                                default sampling parameters (temperature, top_p, top_k,\n"
    "                                min_p, repetition_penalty, max_new_tokens) for requests that\n"
    "                                leave them out: from DIR's generation_config.json (auto,\n"
    "                                default), none (vllm), or another folder's\n"
    "  --override-generation-config JSON\n"
    "                                generation_config.json fields laid over those, e.g.\n"
    "                                '{\"temperature\": 0.5}'\n"
    "  --enforce-eager               cuda: no CUDA graphs (by default decode steps of up to\n"
    "                                min(max-num-seqs, 64) requests replay captured graphs)\n";

namespace {

// --state-snapshot-budget: "0.25" (a fraction, < 1) or bytes ("8GiB", "512MiB", "4096").
void parse_snapshot_budget(const std::string& v, engine::EngineArgs& f) {
  static const std::pair<const char*, uint64_t> kUnits[] = {{"GiB", uint64_t(1) << 30},
                                                            {"MiB", uint64_t(1) << 20},
                                                            {"KiB", uint64_t(1) << 10},
                                                            {"GB", 1000000000},
                                                            {"MB", 1000000},
                                                            {"KB", 1000},
                                                            {"B", 1}};
  std::string number = v;
  uint64_t unit = 0;
  for (const auto& [suffix, scale] : kUnits) {
    const std::string sfx = suffix;
    if (number.size() > sfx.size() && number.ends_with(sfx)) {
      number.resize(number.size() - sfx.size());
      unit = scale;
      break;
    }
  }
  size_t used = 0;
  double x = -1;
  try {
    x = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  VT_REQUIRE(used == number.size() && x >= 0, "--state-snapshot-budget ", v,
           ": expected a fraction in [0, 1) or bytes (8GiB, 512MiB, 4096)");
  if (unit == 0 && x < 1) {
    f.state_snapshot_fraction = x;
  } else {
    f.state_snapshot_bytes = uint64_t(x * double(unit == 0 ? 1 : unit));
  }
}

}  // namespace

engine::EngineArgs model_flags_from_args(const Args& args, const std::string& dir,
                                         int64_t default_max_num_seqs) {
  engine::EngineArgs f;
  f.dir = dir;
  f.load_format = io::load_format_from_name(args.get_or("load-format", "auto"), "--load-format");
  f.language_model_only = args.has("language-model-only");
  f.max_model_len = args.get_int("max-model-len", 0);
  VT_REQUIRE(!args.has("max-model-len") || f.max_model_len > 0, "--max-model-len ", f.max_model_len,
           ": expected > 0");
  f.max_num_seqs = args.get_int("max-num-seqs", default_max_num_seqs);
  f.max_num_batched_tokens = args.get_int("max-num-batched-tokens", 2048);
  if (args.has("num-gpu-blocks-override"))
    f.num_gpu_blocks_override = args.get_int("num-gpu-blocks-override", 0);
  VT_REQUIRE(!(args.has("enable-prefix-caching") && args.has("no-enable-prefix-caching")),
           "--enable-prefix-caching and --no-enable-prefix-caching contradict each other");
  f.enable_prefix_caching = !args.has("no-enable-prefix-caching");
  f.jump_forward = args.has("jump-forward");
  if (auto budget = args.get("state-snapshot-budget")) parse_snapshot_budget(*budget, f);
  f.state_snapshot_stride = args.get_int("state-snapshot-stride", f.state_snapshot_stride);
  f.chat_template_file = args.get_or("chat-template", "");
  f.generation_config = args.get_or("generation-config", "auto");
  f.override_generation_config = args.get_or("override-generation-config", "");
  f.device = engine::resolve_device(args.get_or("device", "auto"), "--device");
  f.gpu_memory_utilization = args.get_double("gpu-memory-utilization", 0.9);
  f.enforce_eager = args.has("enforce-eager");
  // vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN, under this project's prefix; read here only.
  if (const char* v = std::getenv("VTLLM_ALLOW_LONG_MAX_MODEL_LEN"))
    f.allow_long_max_model_len = std::string(v) == "1" || std::string(v) == "true";
  f.validate();
  return f;
}

}  // namespace vtllm::cli
