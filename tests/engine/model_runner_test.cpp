// The engine over the real tiny models (tests/fixtures, produced by the oracle):
// all prompts of a fixture run together through LlmEngine must reproduce every
// oracle greedy continuation token for token, also under a block budget small
// enough to preempt, and with prefix-cache hits.
#include "engine/model_runner.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "engine/llm_engine.h"

namespace vtllm::engine {
namespace {

using nlohmann::json;

struct Case {
  std::string name;
  std::vector<int32_t> prompt;
  std::vector<int32_t> continuation;
};

std::string fixture_dir(const std::string& rel) { return std::string(VTLLM_SOURCE_DIR) + "/" + rel; }

std::vector<Case> read_cases(const std::string& dir) {
  const json ref = json::parse(read_file(dir + "/reference.json"));
  std::vector<Case> cases;
  for (const auto& p : ref["prompts"])
    cases.push_back({p["name"].get<std::string>(), p["ids"].get<std::vector<int32_t>>(),
                     p["continuation"].get<std::vector<int32_t>>()});
  return cases;
}

struct RunResult {
  std::map<std::string, std::vector<int32_t>> tokens;
  SchedulerStats stats;
};

// Every case at once (with `duplicate`, each prompt twice, for prefix hits).
RunResult run_engine(const std::string& dir, const std::vector<Case>& cases, int32_t num_blocks,
                     int64_t budget, bool duplicate, int32_t snapshots = 0) {
  int64_t longest = 0;
  for (const Case& c : cases)
    longest = std::max<int64_t>(longest, c.prompt.size() + c.continuation.size());
  EngineConfig cfg;
  cfg.scheduler.max_num_batched_tokens = budget;
  cfg.scheduler.max_num_seqs = 16;
  cfg.scheduler.max_model_len = longest + 1;
  cfg.kv_cache.block_size = 4;
  cfg.kv_cache.num_blocks = num_blocks;
  cfg.kv_cache.num_state_slots = 16;  // a dense model's runner allocates none
  cfg.kv_cache.num_state_snapshots = snapshots;
  auto runner = ModelRunner::load(dir, cfg.kv_cache);
  // Dense: no slots, so the cache manager keeps prefix caching on.
  if (!needs_state_slots(runner->model())) cfg.kv_cache.num_state_slots = 0;
  LlmEngine engine(cfg, std::move(runner));
  SamplingParams p;
  p.temperature = 0.0f;
  p.ignore_eos = true;
  for (const Case& c : cases) {
    p.max_tokens = static_cast<int64_t>(c.continuation.size());
    engine.add_request(c.name, c.prompt, p);
    if (duplicate) engine.add_request(c.name + "/again", c.prompt, p);
  }
  RunResult r;
  while (engine.has_unfinished())
    for (const EngineOutput& o : engine.step())
      r.tokens[o.request_id].insert(r.tokens[o.request_id].end(), o.new_token_ids.begin(),
                                    o.new_token_ids.end());
  r.stats = engine.stats();
  EXPECT_EQ(r.stats.kv.num_free_blocks, r.stats.kv.num_blocks);
  EXPECT_EQ(r.stats.kv.num_free_state_slots, r.stats.kv.num_state_slots);
  return r;
}

void expect_oracle(const RunResult& r, const std::vector<Case>& cases, bool duplicate) {
  for (const Case& c : cases) {
    EXPECT_EQ(r.tokens.at(c.name), c.continuation) << c.name;
    if (duplicate) {
      EXPECT_EQ(r.tokens.at(c.name + "/again"), c.continuation) << c.name;
    }
  }
}

class EngineOnFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(EngineOnFixture, BatchedGreedyMatchesTheOracle) {
  const std::string dir = fixture_dir(GetParam());
  const auto cases = read_cases(dir);
  ASSERT_GE(cases.size(), 2u);
  expect_oracle(run_engine(dir, cases, 400, 64, false), cases, false);
}

TEST_P(EngineOnFixture, TinyBlockBudgetPreemptsAndStillMatches) {
  const std::string dir = fixture_dir(GetParam());
  const auto cases = read_cases(dir);
  int64_t longest = 0;
  for (const Case& c : cases)
    longest = std::max<int64_t>(longest, c.prompt.size() + c.continuation.size());
  // Room for about two sequences at a time.
  const int32_t blocks = static_cast<int32_t>(2 * ((longest + 1 + 3) / 4) + 1);
  const RunResult r = run_engine(dir, cases, blocks, 32, false);
  EXPECT_GT(r.stats.num_preemptions, 0);
  expect_oracle(r, cases, false);
}

TEST_P(EngineOnFixture, RepeatedPromptsMatchWithPrefixHits) {
  const std::string dir = fixture_dir(GetParam());
  const auto cases = read_cases(dir);
  // Hybrid: without snapshots no hit is possible; with them the GDN state is restored.
  const RunResult off = run_engine(dir, cases, 400, 64, true, 0);
  expect_oracle(off, cases, true);
  const bool hybrid = off.stats.kv.num_state_slots > 0;
  EXPECT_EQ(off.stats.kv.prefix_hits > 0, !hybrid);
  const RunResult on = run_engine(dir, cases, 400, 64, true, 8);
  expect_oracle(on, cases, true);
  EXPECT_GT(on.stats.kv.prefix_hits, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EngineOnFixture,
                         ::testing::Values("tests/fixtures/qwen3-tiny",
                                           "tests/fixtures/qwen3_5-tiny-r2"));

}  // namespace
}  // namespace vtllm::engine
