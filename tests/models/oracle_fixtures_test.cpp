// Every oracle fixture (tools/oracle, f32 transformers on bf16-valued weights) must be
// reproduced STRICTLY by the CPU models: prefill of the whole prompt, then 32 greedy
// one-token decode steps on the paged cache, every token equal to the oracle's and
// every reported logit (the top 5 of each step, and the logsumexp of all of them)
// within 1e-4 of the oracle's, relative to the step's largest |top logit|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "model_harness.h"
#include "models/registry.h"

namespace vtllm::models {
namespace {

using nlohmann::json;
using testing::Harness;
using testing::Sequence;

constexpr double kRelTol = 1e-4;

json read_json(const std::string& path) { return json::parse(read_file(path)); }

struct StepCheck {
  double max_rel = 0;  // over every compared logit and logsumexp
  double min_margin = 1e30;
  int tokens = 0;
};

// Compares one step's logits with the oracle's step `s` of prompt entry `p`.
void compare_step(const std::vector<float>& logits, const json& p, size_t s, StepCheck& c,
                  const std::string& what) {
  const auto& ids = p["top_ids"][s];
  const auto& vals = p["top_logits"][s];
  double scale = 0;
  for (const auto& v : vals) scale = std::max(scale, std::abs(v.get<double>()));
  for (size_t i = 0; i < ids.size(); ++i) {
    const double d = std::abs(double(logits[ids[i].get<size_t>()]) - vals[i].get<double>()) / scale;
    c.max_rel = std::max(c.max_rel, d);
    EXPECT_LE(d, kRelTol) << what << " step " << s << " logit of id " << ids[i];
  }
  double mx = -1e30, sum = 0;
  for (float v : logits) mx = std::max(mx, double(v));
  for (float v : logits) sum += std::exp(double(v) - mx);
  const double lse = mx + std::log(sum);
  const double d = std::abs(lse - p["logsumexp"][s].get<double>()) / scale;
  c.max_rel = std::max(c.max_rel, d);
  EXPECT_LE(d, kRelTol) << what << " step " << s << " logsumexp";
  c.min_margin = std::min(c.min_margin, p["margins"][s].get<double>());
}

void run_fixture(const std::string& rel_dir) {
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/" + rel_dir;
  const json ref = read_json(dir + "/reference.json");
  vt::Stream s;
  auto model = load_model(dir, s, {}, ModelOptions{});
  StepCheck c;
  for (const auto& p : ref["prompts"]) {
    const std::string what = rel_dir + " prompt '" + p["name"].get<std::string>() + "'";
    Harness h(*model, s);
    Sequence seq(p["ids"].get<std::vector<int32_t>>());
    std::vector<float> logits = h.prefill(seq);
    const auto cont = p["continuation"].get<std::vector<int32_t>>();
    for (size_t step = 0; step < cont.size(); ++step) {
      compare_step(logits, p, step, c, what);
      const int32_t tok = testing::argmax(logits);
      ASSERT_EQ(tok, cont[step]) << what << " step " << step << " (oracle margin "
                                 << p["margins"][step] << ")";
      ++c.tokens;
      seq.tokens.push_back(tok);
      if (step + 1 < cont.size()) logits = h.step({{&seq, 1}})[0];
    }
  }
  std::printf("[fixture] %s: %d greedy tokens equal, max logit error %.3g (relative to the step's "
              "largest |logit|), oracle min top-2 margin %.4g\n",
              rel_dir.c_str(), c.tokens, c.max_rel, c.min_margin);
}

// head_dim 48 and no mrope_section in config.json: transformers' default sections,
// clipped to the 6 rotary frequencies, and no layer_types (the default pattern).
TEST(OracleFixtures, Qwen3_5WithoutMropeSectionMatchesOracle) {
  run_fixture("tests/fixtures/qwen3_5-tiny-hd48");
}
TEST(OracleFixtures, Qwen3TinyGreedyMatchesOracle) { run_fixture("tests/fixtures/qwen3-tiny"); }
TEST(OracleFixtures, Qwen3_5TinyR2GreedyMatchesOracle) {
  run_fixture("tests/fixtures/qwen3_5-tiny-r2");
}
TEST(OracleFixtures, Qwen3_5TinyR3VlTextGreedyMatchesOracle) {
  run_fixture("tests/fixtures/qwen3_5-tiny-r3-vl");
}
TEST(OracleFixtures, BundledTinyQwen3_5GreedyMatchesOracle) { run_fixture("models/tiny-qwen3.5"); }

// The MoE fixtures are generated on the GPU machine (tools/oracle/README.md); until they
// are in the tree these skip, saying so.
void run_moe_fixture(const std::string& rel_dir) {
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/" + rel_dir;
  if (!std::filesystem::exists(dir + "/reference.json"))
    GTEST_SKIP() << rel_dir << " is not generated yet: python3 tools/oracle/make_fixtures.py "
                 << "--only qwen3_5_moe-tiny,qwen3_5_moe-tiny-vl on the GPU machine";
  run_fixture(rel_dir);
}
// 8 sparse layers, 16 experts, top-4, fused experts in the checkpoint.
TEST(OracleFixtures, Qwen3_5MoeTinyGreedyMatchesOracle) {
  run_moe_fixture("tests/fixtures/qwen3_5_moe-tiny");
}
// Qwen3_5MoeForConditionalGeneration's text path: 32 experts, top-8.
TEST(OracleFixtures, Qwen3_5MoeTinyVlTextGreedyMatchesOracle) {
  run_moe_fixture("tests/fixtures/qwen3_5_moe-tiny-vl");
}

}  // namespace
}  // namespace vtllm::models
