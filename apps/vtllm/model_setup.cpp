#include "model_setup.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "models/model.h"
#include "models/registry.h"

namespace vtllm::cli {

namespace {
constexpr int kBlockSize = 16;
}  // namespace

std::vector<std::string> model_value_flags() {
  return {"load-format",
          "max-model-len",
          "max-num-seqs",
          "max-num-batched-tokens",
          "num-gpu-blocks-override",
          "chat-template",
          "device",
          "gpu-memory-utilization"};
}

std::vector<std::string> model_bool_flags() {
  return {"language-model-only", "enable-prefix-caching", "no-enable-prefix-caching",
          "enforce-eager"};
}

const char* const kModelFlagsUsage =
    "  --load-format auto|dummy      weights from DIR's safetensors (auto), or deterministic "
    "random\n"
    "                                weights of config.json's shapes (dummy; no weight files "
    "read)\n"
    "  --language-model-only         text only: image inputs are refused (no vision tower is "
    "built\n"
    "                                yet, so multimodal models are text-only either way)\n"
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
    "  --enable-prefix-caching       reuse cached prompt blocks (default)\n"
    "  --no-enable-prefix-caching    do not\n"
    "  --chat-template FILE          a Jinja chat template replacing DIR's\n"
    "  --enforce-eager               cuda: no CUDA graphs (by default decode steps of up to\n"
    "                                min(max-num-seqs, 64) requests replay captured graphs)\n";

ModelFlags model_flags_from_args(const Args& args, const std::string& dir,
                                 int64_t default_max_num_seqs) {
  ModelFlags f;
  f.dir = dir;
  const std::string format = args.get_or("load-format", "auto");
  VT_CHECK(format == "auto" || format == "dummy", "--load-format ", format,
           ": expected auto or dummy");
  f.load_format = io::load_format_from_name(format);
  f.language_model_only = args.has("language-model-only");
  f.max_model_len = args.get_int("max-model-len", 0);
  VT_CHECK(!args.has("max-model-len") || f.max_model_len > 0, "--max-model-len ", f.max_model_len,
           ": expected > 0");
  f.max_num_seqs = args.get_int("max-num-seqs", default_max_num_seqs);
  VT_CHECK(f.max_num_seqs > 0 && f.max_num_seqs <= 65536, "--max-num-seqs ", f.max_num_seqs,
           ": expected [1, 65536]");
  f.max_num_batched_tokens = args.get_int("max-num-batched-tokens", 2048);
  VT_CHECK(f.max_num_batched_tokens > 0, "--max-num-batched-tokens ", f.max_num_batched_tokens,
           ": expected > 0");
  if (args.has("num-gpu-blocks-override")) {
    f.num_blocks_override = args.get_int("num-gpu-blocks-override", 0);
    VT_CHECK(*f.num_blocks_override > 0 && *f.num_blocks_override < (int64_t(1) << 31) - 1,
             "--num-gpu-blocks-override ", *f.num_blocks_override, ": expected [1, 2^31 - 2]");
  }
  VT_CHECK(!(args.has("enable-prefix-caching") && args.has("no-enable-prefix-caching")),
           "--enable-prefix-caching and --no-enable-prefix-caching contradict each other");
  f.enable_prefix_caching = !args.has("no-enable-prefix-caching");
  f.chat_template_file = args.get_or("chat-template", "");
  std::string device = args.get_or("device", "auto");
  VT_CHECK(device == "auto" || device == "cpu" || device == "cuda", "--device ", device,
           ": expected auto, cpu or cuda");
  if (device == "auto") device = VTLLM_WITH_CUDA && vt::cuda_device_count() > 0 ? "cuda" : "cpu";
  if (device == "cuda") {
    VT_CHECK(VTLLM_WITH_CUDA, "--device cuda: this vtllm was built without CUDA");
    VT_CHECK(vt::cuda_device_count() > 0, "--device cuda: no GPU is visible");
    f.device = vt::Device::cuda(0);
  }
  f.gpu_memory_utilization = args.get_double("gpu-memory-utilization", 0.9);
  VT_CHECK(f.gpu_memory_utilization > 0 && f.gpu_memory_utilization <= 1,
           "--gpu-memory-utilization ", f.gpu_memory_utilization, ": expected (0, 1]");
  f.enforce_eager = args.has("enforce-eager");
  return f;
}

engine::GraphOptions graph_options(const ModelFlags& f, int64_t max_model_len) {
  engine::GraphOptions g;
  g.enforce_eager = f.enforce_eager;
  // 64: the batches where launch overhead is a large share of a decode step; each size
  // keeps its logits (N x vocab bf16) held, counted in the cache plan.
  g.max_batch = int32_t(std::min<int64_t>(f.max_num_seqs, 64));
  g.max_context = std::min<int64_t>(max_model_len, g.max_context);
  return g;
}

ModelSetup load_model_setup(const ModelFlags& f) {
  ModelSetup s;
  s.model_config = models::load_model_config(f.dir);
  s.multimodal = s.model_config.multimodal;
  const io::GenerationConfig gen_config = io::load_generation_config(f.dir);
  const int64_t max_model_len =
      f.max_model_len > 0 ? f.max_model_len : s.model_config.text.max_position_embeddings;
  VT_CHECK(max_model_len > 0, f.dir,
           ": config.json gives no max_position_embeddings; pass --max-model-len");

  engine::EngineConfig& ec = s.engine;
  ec.scheduler.max_model_len = max_model_len;
  ec.scheduler.max_num_seqs = int(f.max_num_seqs);
  ec.scheduler.max_num_batched_tokens = f.max_num_batched_tokens;
  ec.kv_cache.block_size = kBlockSize;
  const int64_t blocks_per_seq = (max_model_len + kBlockSize - 1) / kBlockSize;
  // +1: block 0 is the pool's null block.
  ec.kv_cache.num_blocks = int32_t(
      f.num_blocks_override.value_or(blocks_per_seq * std::min<int64_t>(f.max_num_seqs, 16)) + 1);
  ec.kv_cache.enable_prefix_caching = f.enable_prefix_caching;
  // One GDN state slot per running request (a dense model's runner ignores them).
  ec.kv_cache.num_state_slots = int32_t(f.max_num_seqs);
  const auto& eos =
      gen_config.eos_token_ids.empty() ? s.model_config.eos_token_ids : gen_config.eos_token_ids;
  for (int64_t id : eos) ec.eos_token_ids.push_back(int32_t(id));

  try {
    s.tokenizer = text::Tokenizer::from_dir(f.dir);
  } catch (const Error& e) {
    // Oracle fixtures have weights and no tokenizer: token ids in and out still work.
    s.tokenizer_error = e.what();
  }
  try {
    s.chat_template = ChatTemplate::from_dir(f.dir, f.chat_template_file);
  } catch (const Error& e) {
    if (!f.chat_template_file.empty()) throw;
    s.chat_template_error = e.what();
  }

  models::LoadConfig load;
  load.format = f.load_format;
  if (f.device.is_cpu()) {
    s.runner = engine::ModelRunner::load(s.model_config, f.dir, ec.kv_cache, load);
  } else {
    const engine::GraphOptions graphs = graph_options(f, max_model_len);
    load.device = f.device;
    load.dtype = vt::DType::kBF16;
    if (f.num_blocks_override) {
      s.runner = engine::ModelRunner::load(s.model_config, f.dir, ec.kv_cache, load, graphs);
    } else {
      engine::MemoryBudget budget;
      budget.gpu_memory_utilization = f.gpu_memory_utilization;
      budget.max_num_batched_tokens = f.max_num_batched_tokens;
      budget.max_num_seqs = int32_t(f.max_num_seqs);
      s.runner = engine::ModelRunner::load_sized(s.model_config, f.dir, ec.kv_cache, load,
                                                 budget, false, graphs);
    }
    ec.kv_cache = s.runner->kv_config();  // load_sized set num_blocks
  }
  s.hybrid = engine::needs_state_slots(s.runner->model());
  if (s.multimodal && !f.language_model_only)
    std::fprintf(stderr,
                 "vtllm: %s is %s, but vtllm builds no vision tower yet: text only "
                 "(--language-model-only says so and silences this)\n",
                 f.dir.c_str(), s.model_config.architecture_class.c_str());
  return s;
}

std::string describe(const ModelSetup& s, const ModelFlags& f) {
  return str_cat(s.model_config.architecture_class, ", ", s.hybrid ? "hybrid" : "dense",
                 f.load_format == io::LoadFormat::kDummy ? ", dummy weights" : "",
                 f.device.is_cuda() ? ", bf16 on cuda:0" : "",
                 s.multimodal ? (f.language_model_only ? ", language model only"
                                                       : ", text only (no vision tower yet)")
                              : "");
}

}  // namespace vtllm::cli
