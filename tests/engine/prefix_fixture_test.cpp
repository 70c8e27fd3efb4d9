// Hybrid prefix caching on the real tiny Qwen3.5 oracle fixtures (CPU, f32):
// multi-turn shaped prompts built from the fixture's reference prompts and the
// oracle's greedy continuations. Turn 1 must reproduce the oracle; every later
// request, served warm from GDN state snapshots, must sample exactly the tokens
// of a cold engine (prefix caching off) on the same prompt.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "engine/llm_engine.h"
#include "engine/model_runner.h"

namespace vtllm::engine {
namespace {

using nlohmann::json;

constexpr int kBlockSize = 4;

struct Reference {
  std::map<std::string, std::vector<int32_t>> prompt, continuation;
};

std::string fixture(const std::string& rel) { return std::string(VTLLM_SOURCE_DIR) + "/" + rel; }

Reference read_reference(const std::string& dir) {
  const json ref = json::parse(read_file(dir + "/reference.json"));
  Reference r;
  for (const auto& p : ref["prompts"]) {
    const std::string name = p["name"].get<std::string>();
    r.prompt[name] = p["ids"].get<std::vector<int32_t>>();
    r.continuation[name] = p["continuation"].get<std::vector<int32_t>>();
  }
  return r;
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Served {
  std::vector<int32_t> tokens;
  int64_t cached = -1;
};

class FixtureEngine {
 public:
  FixtureEngine(const std::string& dir, bool prefix_caching) {
    EngineConfig cfg;
    cfg.scheduler.max_num_batched_tokens = 64;
    cfg.scheduler.max_num_seqs = 4;
    cfg.scheduler.max_model_len = 1024;
    cfg.kv_cache.block_size = kBlockSize;
    cfg.kv_cache.num_blocks = 600;
    cfg.kv_cache.enable_prefix_caching = prefix_caching;
    cfg.kv_cache.num_state_slots = 4;
    cfg.kv_cache.num_state_snapshots = 16;
    cfg.kv_cache.snapshot_stride = 32;
    auto runner = ModelRunner::load(dir, cfg.kv_cache);
    EXPECT_TRUE(needs_state_slots(runner->model())) << dir << " is not hybrid";
    engine_ = std::make_unique<LlmEngine>(cfg, std::move(runner));
  }
  Served serve(const std::vector<int32_t>& prompt, int64_t max_tokens) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.ignore_eos = true;
    p.max_tokens = max_tokens;
    engine_->add_request("r" + std::to_string(next_++), prompt, p);
    Served s;
    while (engine_->has_unfinished())
      for (const EngineOutput& o : engine_->step()) {
        s.tokens.insert(s.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
        if (o.finished) s.cached = o.num_cached_tokens;
      }
    return s;
  }

 private:
  std::unique_ptr<LlmEngine> engine_;
  int next_ = 0;
};

int64_t floor_block(int64_t n) { return n / kBlockSize * kBlockSize; }

class PrefixOnFixture : public ::testing::TestWithParam<const char*> {};

// Turn k+1 = turn k's prompt + its answer (or, rewritten, another prompt's
// continuation in its place) + a new "user message" (a reference prompt).
TEST_P(PrefixOnFixture, MultiTurnFromSnapshotsMatchesAColdRun) {
  const std::string dir = fixture(GetParam());
  const Reference ref = read_reference(dir);
  FixtureEngine warm(dir, true);
  std::vector<int32_t> history = ref.prompt.at("random_65");
  const Served first = warm.serve(history, 32);
  EXPECT_EQ(first.tokens, ref.continuation.at("random_65"));
  std::vector<int32_t> answer = first.tokens;
  const char* users[] = {"random_17", "random_5", "random_64"};
  for (int turn = 0; turn < 3; ++turn) {
    const bool rewrite = turn == 1;
    const int64_t prompt_len = int64_t(history.size());
    const int64_t expected = rewrite ? floor_block(prompt_len - 1)
                                     : floor_block(prompt_len + int64_t(answer.size()) - 1);
    history = cat(cat(history, rewrite ? ref.continuation.at("random_130") : answer),
                  ref.prompt.at(users[turn]));
    const Served t = warm.serve(history, 12);
    EXPECT_EQ(t.cached, expected) << "turn " << turn + 2;
    EXPECT_EQ(t.tokens, FixtureEngine(dir, false).serve(history, 12).tokens) << "turn " << turn + 2;
    answer = t.tokens;
  }
}

// Conversations sharing a system prefix (the 130-token reference prompt): from
// the third on they restore the state where the prefix's cached blocks end.
TEST_P(PrefixOnFixture, SharedSystemPrefixFromSnapshotsMatchesAColdRun) {
  const std::string dir = fixture(GetParam());
  const Reference ref = read_reference(dir);
  FixtureEngine warm(dir, true);
  const auto& system = ref.prompt.at("random_130");
  const char* users[] = {"random_17", "random_5", "random_64", "random_2"};
  for (int conv = 0; conv < 4; ++conv) {
    const auto prompt = cat(system, ref.prompt.at(users[conv]));
    const Served t = warm.serve(prompt, 8);
    EXPECT_EQ(t.tokens, FixtureEngine(dir, false).serve(prompt, 8).tokens) << "conv " << conv;
    if (conv >= 2) {
      EXPECT_GE(t.cached, floor_block(int64_t(system.size()))) << "conv " << conv;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Hybrid, PrefixOnFixture,
                         ::testing::Values("tests/fixtures/qwen3_5-tiny-r2",
                                           "tests/fixtures/qwen3_5-tiny-hd48"));

}  // namespace
}  // namespace vtllm::engine
