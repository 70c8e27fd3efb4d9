// The engine over the MoE oracle fixtures: every prompt of a fixture at once through
// LlmEngine (chunked prefill under a small token budget, mixed prefill/decode steps,
// GDN state slots) must reproduce each oracle greedy continuation token for token.
// Skips until the MoE fixtures are generated (tools/oracle/README.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "engine/llm_engine.h"
#include "engine/model_runner.h"

namespace vtllm::engine {
namespace {

using nlohmann::json;

class MoeEngineOnFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(MoeEngineOnFixture, BatchedGreedyMatchesTheOracle) {
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/" + GetParam();
  if (!std::filesystem::exists(dir + "/reference.json"))
    GTEST_SKIP() << GetParam() << " is not generated yet (tools/oracle/README.md)";
  const json ref = json::parse(read_file(dir + "/reference.json"));
  int64_t longest = 0;
  for (const auto& p : ref["prompts"])
    longest = std::max<int64_t>(longest, int64_t(p["ids"].size() + p["continuation"].size()));
  EngineConfig cfg;
  cfg.scheduler.max_num_batched_tokens = 64;
  cfg.scheduler.max_num_seqs = 16;
  cfg.scheduler.max_model_len = longest + 1;
  cfg.kv_cache.block_size = 4;
  cfg.kv_cache.num_blocks = 400;
  cfg.kv_cache.num_state_slots = 16;
  LlmEngine engine(cfg, ModelRunner::load(dir, cfg.kv_cache));
  SamplingParams sp;
  sp.temperature = 0.0f;
  sp.ignore_eos = true;
  std::map<std::string, std::vector<int32_t>> want, got;
  for (const auto& p : ref["prompts"]) {
    const std::string name = p["name"].get<std::string>();
    want[name] = p["continuation"].get<std::vector<int32_t>>();
    sp.max_tokens = int64_t(want[name].size());
    engine.add_request(name, p["ids"].get<std::vector<int32_t>>(), sp);
  }
  while (engine.has_unfinished())
    for (const EngineOutput& o : engine.step())
      got[o.request_id].insert(got[o.request_id].end(), o.new_token_ids.begin(),
                               o.new_token_ids.end());
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MoeEngineOnFixture,
                         ::testing::Values("tests/fixtures/qwen3_5_moe-tiny",
                                           "tests/fixtures/qwen3_5_moe-tiny-vl"),
                         [](const auto& info) {
                           std::string n = info.param;
                           n = n.substr(n.rfind('/') + 1);
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace vtllm::engine
