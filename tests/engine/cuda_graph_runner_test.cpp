// CUDA graphs in the ModelRunner (engine/model_runner.h): the capture sizes and the
// padding rule (CPU), and on cuda:0 over the tiny fixtures and dummy weights: decode
// steps replayed from graphs give the same logits, bit for bit, as the same padded
// inputs run eagerly, for batches of 1, 3, 8 and 17 requests; the engine's greedy
// tokens are the same with and without graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

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

std::string fixture_dir(const std::string& rel) { return std::string(VTLLM_SOURCE_DIR) + "/" + rel; }

TEST(GraphSizes, VllmLikeListUpToTheCap) {
  EXPECT_EQ(graph_sizes(64), (std::vector<int32_t>{1, 2, 4, 8, 16, 24, 32, 48, 64}));
  EXPECT_EQ(graph_sizes(20), (std::vector<int32_t>{1, 2, 4, 8, 16, 20}));
  EXPECT_EQ(graph_sizes(3), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(graph_sizes(100).back(), 100);
  EXPECT_TRUE(graph_sizes(0).empty());
  const auto s = graph_sizes(64);
  EXPECT_EQ(graph_size_for(s, 1), 1);
  EXPECT_EQ(graph_size_for(s, 3), 4);
  EXPECT_EQ(graph_size_for(s, 8), 8);
  EXPECT_EQ(graph_size_for(s, 17), 24);
  EXPECT_EQ(graph_size_for(s, 64), 64);
  EXPECT_EQ(graph_size_for(s, 65), 0);
}

TEST(GraphSizes, CpuRunnerNeverUsesGraphs) {
  const std::string dir = fixture_dir("tests/fixtures/qwen3-tiny");
  KvCacheConfig kv;
  kv.block_size = 4;
  kv.num_blocks = 32;
  auto runner = ModelRunner::load(models::load_model_config(dir), dir, kv, {}, GraphOptions{});
  EXPECT_FALSE(runner->uses_graphs());
}

std::vector<std::vector<int32_t>> read_prompts(const std::string& dir) {
  const nlohmann::json ref = nlohmann::json::parse(read_file(dir + "/reference.json"));
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& p : ref["prompts"]) prompts.push_back(p["ids"].get<std::vector<int32_t>>());
  return prompts;
}

models::LoadConfig on_gpu(io::LoadFormat format = io::LoadFormat::kAuto) {
  models::LoadConfig l;
  l.device = vt::Device::cuda(0);
  l.progress = io::LoadOptions::Progress::kNever;
  l.format = format;
  return l;
}

// B requests (prompts cycled), each in its own blocks [1 + r * per, ...) and state
// slot r; prefill at context 0, then decode steps of the argmax tokens.
struct Sequences {
  int block_size = 4;
  int32_t per = 0;  // blocks per request
  std::vector<std::vector<int32_t>> tokens;
  std::vector<int32_t> context;  // tokens already in the cache

  StepPlan step(bool prefill) const {
    StepPlan fb;
    fb.block_size = block_size;
    fb.max_blocks_per_seq = per;
    fb.query_start_loc.push_back(0);
    for (size_t r = 0; r < tokens.size(); ++r) {
      const int32_t ctx = prefill ? 0 : context[r];
      const int32_t len = int32_t(tokens[r].size());
      for (int32_t p = ctx; p < len; ++p) {
        fb.token_ids.push_back(tokens[r][size_t(p)]);
        fb.positions.push_back(p);
        fb.slot_mapping.push_back(int64_t(1 + int32_t(r) * per + p / block_size) * block_size +
                                  p % block_size);
      }
      fb.query_start_loc.push_back(int32_t(fb.token_ids.size()));
      fb.seq_lens.push_back(len);
      fb.context_lens.push_back(ctx);
      for (int32_t i = 0; i < per; ++i) fb.block_table.push_back(1 + int32_t(r) * per + i);
      fb.state_slots.push_back(int32_t(r));
      fb.logits_indices.push_back(int32_t(fb.token_ids.size()) - 1);
      fb.logits_requests.push_back(int32_t(r));
    }
    return fb;
  }
};

std::vector<int32_t> argmax_rows(const std::vector<float>& logits, int64_t vocab) {
  std::vector<int32_t> ids;
  for (size_t r = 0; r * size_t(vocab) < logits.size(); ++r) {
    const float* row = logits.data() + r * size_t(vocab);
    ids.push_back(int32_t(std::max_element(row, row + vocab) - row));
  }
  return ids;
}

// One pair of runners (graphs; the same padded inputs run eagerly) over a cache for the
// largest batch; per batch size B: prefill B requests (eager on both), then `steps`
// decode steps whose logits must match byte for byte.
void replay_equals_padded_eager(const std::string& dir, io::LoadFormat format,
                                const std::vector<int64_t>& batches, int steps) {
  const io::ModelConfig config = models::load_model_config(dir);
  std::vector<std::vector<int32_t>> prompts;
  if (format == io::LoadFormat::kDummy)
    prompts = {{1, 2, 3, 4, 5, 6, 7}, {9, 8}, {100, 200, 300}};
  else
    prompts = read_prompts(dir);
  const int64_t max_b = *std::max_element(batches.begin(), batches.end());
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  const int32_t per = int32_t((longest + size_t(steps) + 2 + 3) / 4);
  KvCacheConfig kv;
  kv.block_size = 4;
  kv.num_blocks = 1 + int32_t(max_b) * per;
  kv.num_state_slots = int32_t(max_b);
  GraphOptions graphs;
  graphs.max_batch = 32;
  GraphOptions padded = graphs;
  padded.padded_eager = true;
  auto a = ModelRunner::load(config, dir, kv, on_gpu(format), graphs);
  auto b = ModelRunner::load(config, dir, kv, on_gpu(format), padded);
  ASSERT_TRUE(a->uses_graphs());
  const int64_t vocab = a->vocab_size();
  for (int64_t B : batches) {
    Sequences seq;
    seq.per = per;
    for (int64_t r = 0; r < B; ++r) seq.tokens.push_back(prompts[size_t(r) % prompts.size()]);
    seq.context.assign(size_t(B), 0);
    std::vector<float> la = a->execute_logits(seq.step(true)), lb = b->execute_logits(seq.step(true));
    ASSERT_EQ(la, lb) << "prefill (eager on both), B=" << B;
    for (int s = 0; s < steps; ++s) {
      const std::vector<int32_t> next = argmax_rows(la, vocab);
      for (size_t r = 0; r < seq.tokens.size(); ++r) {
        seq.tokens[r].push_back(next[r]);
        seq.context[r] = int32_t(seq.tokens[r].size()) - 1;
      }
      const StepPlan fb = seq.step(false);
      la = a->execute_logits(fb);
      lb = b->execute_logits(fb);
      ASSERT_EQ(la.size(), size_t(B * vocab));
      ASSERT_EQ(lb.size(), la.size());
      EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)), 0)
          << dir << " B=" << B << " decode step " << s;
    }
  }
  EXPECT_EQ(a->num_graphs(), size_t(4));  // sizes 1, 4, 8, 24
}

class CudaGraphRunner : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (vt::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CudaGraphRunner, ReplayEqualsPaddedEagerBitForBit) {
  replay_equals_padded_eager(fixture_dir(GetParam()), io::LoadFormat::kAuto, {1, 3, 8, 17}, 4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaGraphRunner,
                         ::testing::Values("tests/fixtures/qwen3-tiny",
                                           "tests/fixtures/qwen3_5-tiny-r2",
                                           "tests/fixtures/qwen3_5-tiny-hd48"));

TEST(CudaGraphRunnerDummy, DefaultTextModelShapesReplayEqualsPaddedEager) {
  if (vt::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::string dir = fixture_dir("bench/models/qwen3_5-default-text");
  replay_equals_padded_eager(dir, io::LoadFormat::kDummy, {1, 3, 8, 17}, 2);
}

// The engine with graphs produces the tokens it produces without them (greedy).
TEST_P(CudaGraphRunner, EngineTokensWithAndWithoutGraphs) {
  const std::string dir = fixture_dir(GetParam());
  const auto prompts = read_prompts(dir);
  auto run = [&](bool eager) {
    EngineConfig cfg;
    cfg.scheduler.max_num_batched_tokens = 256;
    cfg.scheduler.max_num_seqs = 16;
    cfg.scheduler.max_model_len = 512;  // the fixtures' longest prompt is 300 tokens
    cfg.kv_cache.block_size = 4;
    cfg.kv_cache.num_blocks = 1200;  // every prompt and its output at once, blocks of 4
    cfg.kv_cache.num_state_slots = 16;
    GraphOptions g;
    g.enforce_eager = eager;
    auto runner = ModelRunner::load(models::load_model_config(dir), dir, cfg.kv_cache, on_gpu(), g);
    if (!needs_state_slots(runner->model())) cfg.kv_cache.num_state_slots = 0;
    LlmEngine engine(cfg, std::move(runner));
    SamplingParams p;
    p.temperature = 0.0f;
    p.ignore_eos = true;
    p.max_tokens = 12;
    p.logprobs = 2;  // the top-2 margin of each step, for tie_compare.h
    for (size_t i = 0; i < prompts.size(); ++i) engine.add_request("r" + std::to_string(i), prompts[i], p);
    std::map<std::string, TokenTrace> out;
    while (engine.has_unfinished())
      for (const EngineOutput& o : engine.step()) record(out, o);
    return out;
  };
  // Padding changes GEMM shapes (M) and the attention split, so logits may differ in the
  // last bits: tokens must agree up to a bf16 tie (tie_compare.h).
  expect_equal_up_to_ties(run(false), run(true), "graphs vs eager");
}

}  // namespace
}  // namespace vtllm::engine
