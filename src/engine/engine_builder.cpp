#include "engine/engine_builder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "models/registry.h"
#include "vt/device.h"
#include "vt/memory.h"

namespace vtllm::engine {

namespace {
constexpr int kBlockSize = 16;
}  // namespace

void EngineArgs::validate() const {
  VT_REQUIRE(!dir.empty(), "no model directory given");
  VT_REQUIRE(max_model_len >= 0, "--max-model-len ", max_model_len, ": expected > 0");
  VT_REQUIRE(max_num_seqs > 0 && max_num_seqs <= 65536, "--max-num-seqs ", max_num_seqs,
           ": expected [1, 65536]");
  VT_REQUIRE(max_num_batched_tokens > 0, "--max-num-batched-tokens ", max_num_batched_tokens,
           ": expected > 0");
  if (num_gpu_blocks_override)
    VT_REQUIRE(*num_gpu_blocks_override > 0 && *num_gpu_blocks_override < (int64_t(1) << 31) - 1,
             "--num-gpu-blocks-override ", *num_gpu_blocks_override, ": expected [1, 2^31 - 2]");
  VT_REQUIRE(state_snapshot_fraction >= 0 && state_snapshot_fraction < 1, "--state-snapshot-budget ",
           state_snapshot_fraction, ": expected a fraction in [0, 1)");
  VT_REQUIRE(state_snapshot_stride >= 0 && state_snapshot_stride % kBlockSize == 0,
           "--state-snapshot-stride ", state_snapshot_stride,
           ": expected a non-negative multiple of the block size ", kBlockSize);
  VT_REQUIRE(gpu_memory_utilization > 0 && gpu_memory_utilization <= 1,
           "--gpu-memory-utilization ", gpu_memory_utilization, ": expected (0, 1]");
  if (device.is_cuda()) {
    if (!VTLLM_WITH_CUDA) VT_THROW("--device cuda: this vtllm was built without CUDA");
    if (vt::cuda_device_count() <= device.index)
      VT_THROW("--device ", device.str(), ": no such GPU is visible");
  }
}

io::GenerationConfig sampling_generation_config(const EngineArgs& a) {
  io::GenerationConfig g;
  if (a.generation_config == "auto") {
    g = io::load_generation_config(a.dir);
  } else if (a.generation_config != "vllm") {
    VT_REQUIRE(std::filesystem::is_directory(a.generation_config), "--generation-config '",
               a.generation_config, "': expected auto, vllm or a folder");
    VT_REQUIRE(std::filesystem::exists(std::filesystem::path(a.generation_config) /
                                       "generation_config.json"),
               "--generation-config '", a.generation_config,
               "': the folder has no generation_config.json");
    g = io::load_generation_config(a.generation_config);
  }
  if (!a.override_generation_config.empty()) {
    const io::GenerationConfig o =
        io::parse_generation_config(a.override_generation_config, "--override-generation-config");
    auto lay = [](auto& dst, const auto& src) {
      if (src) dst = src;
    };
    lay(g.do_sample, o.do_sample);
    lay(g.temperature, o.temperature);
    lay(g.top_p, o.top_p);
    lay(g.top_k, o.top_k);
    lay(g.min_p, o.min_p);
    lay(g.repetition_penalty, o.repetition_penalty);
    lay(g.max_new_tokens, o.max_new_tokens);
  }
  return g;
}

vt::Device resolve_device(const std::string& name, const std::string& what) {
  if (name == "auto")
    return VTLLM_WITH_CUDA && vt::cuda_device_count() > 0 ? vt::Device::cuda(0) : vt::Device::cpu();
  try {
    return vt::device_from_name(name);
  } catch (const Error& e) {
    VT_THROW(what, " ", name, ": ", e.what(), " or auto");
  }
}

uint64_t host_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

namespace {

// The CPU cache build_engine is about to allocate, checked against available memory.
void check_cpu_cache_fits(const io::ModelConfig& config, const KvCacheConfig& kv,
                          const EngineArgs& a) {
  const CacheFootprint f = cache_footprint(models::declare_cache_spec(config), kv.block_size,
                                           vt::DType::kF32);
  const uint64_t kv_bytes = uint64_t(kv.num_blocks) * uint64_t(f.bytes_per_block);
  const uint64_t state_bytes =
      uint64_t(kv.num_state_slots + kv.num_state_snapshots) * uint64_t(f.bytes_per_state_slot);
  const uint64_t available = host_memory_available();
  const double gib = double(uint64_t(1) << 30);
  if (!a.quiet)
    std::fprintf(stderr,
                 "vtllm: cpu cache: %d KV blocks of %d tokens (%.2f GiB) + GDN state %.2f GiB; "
                 "%.2f GiB available\n",
                 kv.num_blocks - 1, kv.block_size, double(kv_bytes) / gib,
                 double(state_bytes) / gib, double(available) / gib);
  if (available > 0 && double(kv_bytes + state_bytes) > 0.9 * double(available))
    VT_THROW("the CPU KV cache (", kv.num_blocks - 1, " blocks of ", kv.block_size, " tokens, ",
             double(kv_bytes) / gib, " GiB) and GDN state (", double(state_bytes) / gib,
             " GiB) exceed 90% of the ", double(available) / gib,
             " GiB available; lower --max-model-len or --max-num-seqs, or set "
             "--num-gpu-blocks-override");
}

}  // namespace

int32_t num_state_snapshots(const EngineArgs& a, int64_t bytes_per_state_slot,
                            uint64_t kv_bytes) {
  if (!a.enable_prefix_caching || bytes_per_state_slot <= 0) return 0;
  double bytes = 0;
  if (a.state_snapshot_bytes) {
    bytes = double(*a.state_snapshot_bytes);
  } else if (kv_bytes > 0) {
    // The snapshots' share of KV + snapshots.
    const double f = a.state_snapshot_fraction;
    bytes = f / (1 - f) * double(kv_bytes);
  }
  if (bytes <= 0) return 0;
  return int32_t(std::clamp(bytes / double(bytes_per_state_slot), 1.0, double(1 << 20)));
}

GraphOptions graph_options(const EngineArgs& a, int64_t max_model_len) {
  GraphOptions g;
  g.enforce_eager = a.enforce_eager;
  // 64: the batches where launch overhead is a large share of a decode step; each size
  // keeps its logits (N x vocab bf16) held, counted in the cache plan.
  g.max_batch = int32_t(std::min<int64_t>(a.max_num_seqs, 64));
  g.max_context = std::min<int64_t>(max_model_len, g.max_context);
  return g;
}

EngineParts build_engine(const EngineArgs& a) {
  a.validate();
  EngineParts s;
  s.model_config = models::load_model_config(a.dir);
  s.multimodal = s.model_config.multimodal;
  const io::GenerationConfig gen_config = io::load_generation_config(a.dir);
  const int64_t max_model_len =
      a.max_model_len > 0 ? a.max_model_len : s.model_config.text.max_position_embeddings;
  VT_REQUIRE(max_model_len > 0, a.dir,
           ": config.json gives no max_position_embeddings; pass --max-model-len");
  const int64_t model_max = s.model_config.text.max_position_embeddings;
  if (model_max > 0 && max_model_len > model_max && !a.allow_long_max_model_len)
    VT_THROW("--max-model-len ", max_model_len, " exceeds the model's max_position_embeddings ",
             model_max, " (", a.dir, "/config.json); set VTLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to "
             "allow it (outputs past the trained length may be wrong)");

  EngineConfig& ec = s.engine;
  ec.scheduler.max_model_len = max_model_len;
  ec.scheduler.max_num_seqs = int(a.max_num_seqs);
  ec.scheduler.max_num_batched_tokens = a.max_num_batched_tokens;
  ec.kv_cache.block_size = kBlockSize;
  const int64_t blocks_per_seq = (max_model_len + kBlockSize - 1) / kBlockSize;
  // +1: block 0 is the pool's null block.
  ec.kv_cache.num_blocks = int32_t(
      a.num_gpu_blocks_override.value_or(blocks_per_seq * std::min<int64_t>(a.max_num_seqs, 16)) +
      1);
  ec.kv_cache.enable_prefix_caching = a.enable_prefix_caching;
  ec.jump_forward = a.jump_forward;
  // One GDN state slot per running request (a dense model's runner ignores them).
  ec.kv_cache.num_state_slots = int32_t(a.max_num_seqs);
  {
    const CacheFootprint f =
        cache_footprint(models::declare_cache_spec(s.model_config), kBlockSize,
                        a.device.is_cpu() ? vt::DType::kF32 : vt::DType::kBF16);
    const bool blocks_given = a.device.is_cpu() || a.num_gpu_blocks_override.has_value();
    const uint64_t kv_bytes =
        blocks_given ? uint64_t(ec.kv_cache.num_blocks - 1) * uint64_t(f.bytes_per_block) : 0;
    ec.kv_cache.num_state_snapshots = num_state_snapshots(a, f.bytes_per_state_slot, kv_bytes);
    // Sized from the device: the cache plan gives the share of what the weights,
    // activations and graphs leave (ModelRunner::load_sized).
    if (!blocks_given && !a.state_snapshot_bytes && f.bytes_per_state_slot > 0 &&
        a.enable_prefix_caching)
      ec.kv_cache.snapshot_fraction = a.state_snapshot_fraction;
    ec.kv_cache.snapshot_stride = a.state_snapshot_stride;
  }
  const auto& eos =
      gen_config.eos_token_ids.empty() ? s.model_config.eos_token_ids : gen_config.eos_token_ids;
  for (int64_t id : eos) ec.eos_token_ids.push_back(int32_t(id));
  s.generation_config = sampling_generation_config(a);

  try {
    s.tokenizer = text::Tokenizer::from_dir(a.dir);
  } catch (const Error& e) {
    // Oracle fixtures have weights and no tokenizer: token ids in and out still work.
    s.tokenizer_error = e.what();
  }
  try {
    s.chat_template = ChatTemplate::from_dir(a.dir, a.chat_template_file);
  } catch (const Error& e) {
    if (!a.chat_template_file.empty()) throw;
    s.chat_template_error = e.what();
  }

  models::ModelOptions options = models::ModelOptions::from_env();
  options.language_model_only = a.language_model_only;  // no tower built, its weights not read
  models::LoadConfig load;
  load.format = a.load_format;
  load.dummy_seed = a.dummy_seed;
  load.progress = a.progress;
  if (a.device.is_cpu()) {
    check_cpu_cache_fits(s.model_config, ec.kv_cache, a);
    s.runner = ModelRunner::load(s.model_config, a.dir, ec.kv_cache, load, std::nullopt, options);
  } else {
    const GraphOptions graphs = graph_options(a, max_model_len);
    load.device = a.device;
    load.dtype = vt::DType::kBF16;
    if (a.num_gpu_blocks_override) {
      s.runner = ModelRunner::load(s.model_config, a.dir, ec.kv_cache, load, graphs, options);
    } else {
      MemoryBudget budget;
      budget.gpu_memory_utilization = a.gpu_memory_utilization;
      budget.max_num_batched_tokens = a.max_num_batched_tokens;
      budget.max_num_seqs = int32_t(a.max_num_seqs);
      s.runner = ModelRunner::load_sized(s.model_config, a.dir, ec.kv_cache, load, budget,
                                         a.quiet, graphs, options);
    }
    ec.kv_cache = s.runner->kv_config();  // load_sized set num_blocks
  }
  s.hybrid = needs_state_slots(s.runner->model());
  s.vision = s.runner->encoder_bytes_per_token() > 0;
  if (s.vision) ec.scheduler.encoder_bytes_per_token = s.runner->encoder_bytes_per_token();
  if (s.multimodal && !s.vision && !a.language_model_only && !a.quiet)
    std::fprintf(stderr,
                 "vtllm: %s is %s, but its model has no vision tower here: text only "
                 "(--language-model-only says so and silences this)\n",
                 a.dir.c_str(), s.model_config.architecture_class.c_str());
  return s;
}

std::string EngineParts::describe(const EngineArgs& a) const {
  return str_cat(model_config.architecture_class, ", ", hybrid ? "hybrid" : "dense",
                 a.load_format == io::LoadFormat::kDummy ? ", dummy weights" : "",
                 a.device.is_cuda() ? ", bf16 on " + a.device.str() : "",
                 multimodal ? (a.language_model_only ? ", language model only"
                               : vision              ? ", images and videos"
                                                     : ", text only (no vision tower)")
                            : "");
}

}  // namespace vtllm::engine
