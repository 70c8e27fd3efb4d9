// The engine on cuda:0 over the tiny fixtures (bf16 model, KV cache and GDN state
// slots on the GPU). What is checked here is the engine's bookkeeping on the
// device, not the numerics (the CUDA-vs-oracle gate is the models' test): the
// same tokens, up to bf16 ties (tie_compare.h), whether requests run batched, one at
// a time or under preemption and aborts; zero blocks held at the end; the device argmax equal to the argmax
// of the logits the host receives; the KV cache sized from memory utilization.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "base/file.h"
#include "engine/llm_engine.h"
#include "models/registry.h"
#include "vt/memory.h"
#include "engine/model_runner.h"
#include "io/config.h"
#include "tie_compare.h"
#include "vt/device.h"

namespace vtllm::engine {
namespace {

using nlohmann::json;

std::string fixture_dir(const std::string& rel) { return std::string(VTLLM_SOURCE_DIR) + "/" + rel; }

std::vector<std::vector<int32_t>> read_prompts(const std::string& dir) {
  const json ref = json::parse(
      read_file(dir + "/reference.json"));  // named: a range-for over a temporary's member dangles
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& p : ref["prompts"])
    prompts.push_back(p["ids"].get<std::vector<int32_t>>());
  return prompts;
}

constexpr int64_t kMaxTokens = 12;

models::LoadConfig on_gpu() {
  models::LoadConfig l;
  l.device = vt::Device::cuda(0);
  l.progress = io::LoadOptions::Progress::kNever;
  return l;
}

EngineConfig engine_config(const std::vector<std::vector<int32_t>>& prompts, int32_t num_blocks,
                           int64_t budget) {
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max<int64_t>(longest, int64_t(p.size()) + kMaxTokens);
  EngineConfig cfg;
  cfg.scheduler.max_num_batched_tokens = budget;
  cfg.scheduler.max_num_seqs = 16;
  cfg.scheduler.max_model_len = longest + 1;
  cfg.kv_cache.block_size = 4;
  cfg.kv_cache.num_blocks = num_blocks;
  cfg.kv_cache.num_state_slots = 16;
  return cfg;
}

struct EngineRun {
  std::map<std::string, TokenTrace> tokens;
  SchedulerStats stats;
};

// Runs `prompts` on a fresh engine: all queued at once (solo = false) or each run to
// completion before the next is added; `abort_odd` aborts every odd request after
// two steps.
EngineRun run(const std::string& dir, const std::vector<std::vector<int32_t>>& prompts,
        int32_t num_blocks, int64_t budget, bool solo, bool abort_odd = false) {
  EngineConfig cfg = engine_config(prompts, num_blocks, budget);
  auto runner = ModelRunner::load(models::load_model_config(dir), dir, cfg.kv_cache, on_gpu());
  EXPECT_TRUE(runner->model().device().is_cuda());
  if (!needs_state_slots(runner->model())) cfg.kv_cache.num_state_slots = 0;
  LlmEngine engine(cfg, std::move(runner));
  SamplingParams p;
  p.temperature = 0.0f;
  p.ignore_eos = true;
  p.max_tokens = kMaxTokens;
  p.logprobs = 2;  // the top-2 margin of each step, for tie_compare.h
  EngineRun r;
  auto step = [&] {
    for (const EngineOutput& o : engine.step())
      record(r.tokens, o);
  };
  auto drain = [&] {
    while (engine.has_unfinished()) step();
  };
  for (size_t i = 0; i < prompts.size(); ++i) {
    engine.add_request("r" + std::to_string(i), prompts[i], p);
    if (solo) drain();
  }
  if (abort_odd) {
    for (int s = 0; s < 2 && engine.has_unfinished(); ++s) step();
    for (size_t i = 1; i < prompts.size(); i += 2) {
      engine.abort("r" + std::to_string(i));
      r.tokens.erase("r" + std::to_string(i));
    }
  }
  drain();
  r.stats = engine.stats();
  EXPECT_EQ(r.stats.kv.num_free_blocks, r.stats.kv.num_blocks);
  EXPECT_EQ(r.stats.kv.num_free_state_slots, r.stats.kv.num_state_slots);
  EXPECT_EQ(r.stats.kv.num_blocks, num_blocks - 1);
  return r;
}

class CudaEngine : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (vt::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CudaEngine, BatchedEqualsOneAtATime) {
  const std::string dir = fixture_dir(GetParam());
  const auto prompts = read_prompts(dir);
  ASSERT_GE(prompts.size(), 2u);
  const EngineRun batched = run(dir, prompts, 400, 64, false);
  const EngineRun solo = run(dir, prompts, 400, 64, true);
  ASSERT_EQ(batched.tokens.size(), prompts.size());
  for (const auto& [id, t] : batched.tokens) EXPECT_EQ(t.tokens.size(), size_t(kMaxTokens)) << id;
  expect_equal_up_to_ties(batched.tokens, solo.tokens, "batched vs solo");
}

TEST_P(CudaEngine, PreemptionAndAbortLeaveNoBlocks) {
  const std::string dir = fixture_dir(GetParam());
  const auto prompts = read_prompts(dir);
  const EngineRun batched = run(dir, prompts, 400, 64, false);
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max<int64_t>(longest, int64_t(p.size()) + kMaxTokens);
  // Room for the longest sequence and three blocks more: requests growing by decode
  // must preempt each other.
  const int32_t blocks = int32_t((longest + 1 + 3) / 4 + 3 + 1);
  const EngineRun tight = run(dir, prompts, blocks, 32, false);
  EXPECT_GT(tight.stats.num_preemptions, 0);
  expect_equal_up_to_ties(tight.tokens, batched.tokens, "preempted vs batched");
  const EngineRun aborted = run(dir, prompts, blocks, 32, false, true);
  std::map<std::string, TokenTrace> kept;  // the requests that were not aborted
  for (const auto& [id, t] : aborted.tokens) kept[id] = batched.tokens.at(id);
  expect_equal_up_to_ties(aborted.tokens, kept, "with aborts vs batched");
}

// Prefill of every prompt at context 0 (so running it twice gives the same logits).
StepPlan prefill_batch(const std::vector<std::vector<int32_t>>& prompts, int block_size) {
  StepPlan fb;
  fb.block_size = block_size;
  int32_t max_blocks = 0;
  for (const auto& p : prompts)
    max_blocks = std::max(max_blocks, int32_t((p.size() + block_size - 1) / block_size));
  fb.max_blocks_per_seq = max_blocks;
  fb.query_start_loc.push_back(0);
  int32_t next = 1;
  for (size_t r = 0; r < prompts.size(); ++r) {
    const auto& p = prompts[r];
    const int32_t own = int32_t((p.size() + block_size - 1) / block_size);
    for (int32_t i = 0; i < max_blocks; ++i) fb.block_table.push_back(i < own ? next + i : 0);
    for (size_t t = 0; t < p.size(); ++t) {
      fb.token_ids.push_back(p[t]);
      fb.positions.push_back(int64_t(t));
      fb.slot_mapping.push_back(int64_t(next) * block_size + int64_t(t));
    }
    next += own;
    fb.query_start_loc.push_back(int32_t(fb.token_ids.size()));
    fb.seq_lens.push_back(int32_t(p.size()));
    fb.context_lens.push_back(0);
    fb.state_slots.push_back(int32_t(r));
    fb.logits_indices.push_back(int32_t(fb.token_ids.size()) - 1);
    fb.logits_requests.push_back(int32_t(r));
  }
  return fb;
}

TEST_P(CudaEngine, DeviceArgmaxEqualsHostArgmaxOfLogits) {
  const std::string dir = fixture_dir(GetParam());
  const auto prompts = read_prompts(dir);
  EngineConfig cfg = engine_config(prompts, 400, 64);
  auto runner = ModelRunner::load(models::load_model_config(dir), dir, cfg.kv_cache, on_gpu());
  const StepPlan fb = prefill_batch(prompts, cfg.kv_cache.block_size);
  const std::vector<float> logits = runner->execute_logits(fb);
  const std::vector<int32_t> ids = runner->execute_greedy(fb);
  const int64_t vocab = runner->vocab_size();
  ASSERT_EQ(logits.size(), prompts.size() * size_t(vocab));
  ASSERT_EQ(ids.size(), prompts.size());
  for (size_t r = 0; r < prompts.size(); ++r) {
    const float* row = logits.data() + r * size_t(vocab);
    // First maximum: the lowest id on ties, as the sampler and vt::argmax.
    const int32_t want = int32_t(std::max_element(row, row + vocab) - row);
    EXPECT_EQ(ids[r], want) << "row " << r;
    EXPECT_TRUE(std::all_of(row, row + vocab, [](float v) { return std::isfinite(v); }));
  }
}

TEST_P(CudaEngine, KvCacheTakesTheMemoryUtilizationLeaves) {
  const std::string dir = fixture_dir(GetParam());
  const auto prompts = read_prompts(dir);
  EngineConfig cfg = engine_config(prompts, 0, 64);
  const vt::DeviceMemoryInfo start = vt::device_memory_info(vt::Device::cuda(0));
  MemoryBudget budget;
  // What is in use now plus 512 MiB: a few hundred MiB of KV after the tiny model.
  budget.gpu_memory_utilization = double(start.used() + (uint64_t(512) << 20)) / double(start.total);
  budget.max_num_batched_tokens = 256;
  budget.max_num_seqs = 16;
  auto runner = ModelRunner::load_sized(models::load_model_config(dir), dir, cfg.kv_cache, on_gpu(),
                                        budget, true);
  ASSERT_TRUE(runner->cache_plan().has_value());
  const CachePlan& plan = *runner->cache_plan();
  EXPECT_EQ(runner->kv_config().num_blocks, plan.num_blocks + 1);
  EXPECT_GT(plan.num_blocks, 0);
  // The weights are measured across the load by cudaMemGetInfo, which does not see the
  // tiny fixtures' tensors: the driver carves small cudaMallocs out of pages it holds.
  EXPECT_LE(plan.weights, plan.in_use);
  const double share = budget.gpu_memory_utilization * double(plan.total);
  const double used = double(plan.in_use + plan.activation_peak + plan.state_bytes);
  // Whole blocks: what is left after the cache is less than one block.
  EXPECT_LE(used + double(plan.kv_bytes()), share);
  EXPECT_GT(used + double(plan.kv_bytes() + plan.bytes_per_block), share);
  // The cache the runner allocated is the plan's (cudaMalloc rounds each tensor to
  // 2 MiB pages; the fixtures have at most a few dozen cache tensors).
  const vt::DeviceMemoryInfo now = vt::device_memory_info(vt::Device::cuda(0));
  const double allocated = double(now.used()) - double(plan.in_use);
  const double planned = double(plan.kv_bytes() + plan.bytes_per_block + plan.state_bytes);
  EXPECT_NEAR(allocated, planned, 64.0 * (1 << 20)) << plan.describe();
  EXPECT_GE(now.used(), start.used());
  // And it runs: the engine over the sized cache finishes a request.
  cfg.kv_cache = runner->kv_config();
  if (!needs_state_slots(runner->model())) cfg.kv_cache.num_state_slots = 0;
  LlmEngine engine(cfg, std::move(runner));
  SamplingParams p;
  p.temperature = 0.0f;
  p.ignore_eos = true;
  p.max_tokens = 4;
  engine.add_request("a", prompts[0], p);
  int64_t n = 0;
  while (engine.has_unfinished())
    for (const EngineOutput& o : engine.step()) n += int64_t(o.new_token_ids.size());
  EXPECT_EQ(n, 4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaEngine,
                         ::testing::Values("tests/fixtures/qwen3-tiny",
                                           "tests/fixtures/qwen3_5-tiny-r2",
                                           "tests/fixtures/qwen3_5-tiny-hd48"));

}  // namespace
}  // namespace vtllm::engine
