// The MoE classes end to end on dummy weights (no oracle needed): a tiny
// Qwen3_5MoeForCausalLM from config.json alone, its chunked prefill against the whole
// prompt, decode after prefill against one forward over the full sequence, and two
// sequences in one batch against each alone (routing is per token, so a token's
// experts must not depend on its neighbours). Logits agree to f32 rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../io/st_writer.h"
#include "model_harness.h"
#include "models/registry.h"

namespace vtllm::models {
namespace {

using testing::Harness;
using testing::Sequence;

constexpr double kTol = 2e-5;

const char* kConfig = R"({"architectures": ["Qwen3_5MoeForCausalLM"],
  "model_type": "qwen3_5_moe_text", "vocab_size": 300, "hidden_size": 64,
  "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
  "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
  "linear_value_head_dim": 16, "num_experts": 16, "num_experts_per_tok": 4,
  "moe_intermediate_size": 16, "shared_expert_intermediate_size": 24,
  "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                      "partial_rotary_factor": 0.25, "mrope_section": [2, 1, 1]}})";

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double mx = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    mx = std::max(mx, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return scale > 0 ? mx / scale : 1.0;
}

std::vector<int32_t> random_prompt(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& t : ids) t = int32_t(rng() % 300u);
  return ids;
}

class MoeModel : public ::testing::Test {
 protected:
  void SetUp() override {
    io::testing::write_file(dir_ / "config.json", kConfig);
    LoadConfig load;
    load.format = io::LoadFormat::kDummy;
    load.dummy_seed = 3;
    load.progress = io::LoadOptions::Progress::kNever;
    model_ = load_model(dir_.str(), s_, load, ModelOptions{});
  }
  std::vector<float> prefill(const std::vector<int32_t>& ids, int64_t chunk) {
    Harness h(*model_, s_);
    Sequence seq(ids);
    return h.prefill(seq, chunk);
  }
  io::testing::TempDir dir_;
  vt::Stream s_;
  std::unique_ptr<Model> model_;
};

TEST_F(MoeModel, DeclaresTheSparseBlockInEveryLayer) {
  int64_t routers = 0;
  for (const io::ParamSpec& p : declare_params(load_model_config(dir_.str())))
    routers += p.name.ends_with(".mlp.gate.weight");
  EXPECT_EQ(routers, 4);
}

TEST_F(MoeModel, ChunkedPrefillMatchesWholePrompt) {
  const auto ids = random_prompt(90, 1);
  const auto whole = prefill(ids, 0);
  for (int64_t chunk : {1, 7, 64}) EXPECT_LE(rel_diff(prefill(ids, chunk), whole), kTol) << chunk;
}

TEST_F(MoeModel, DecodeMatchesFullForward) {
  auto ids = random_prompt(20, 2);
  Harness h(*model_, s_);
  Sequence seq(ids);
  std::vector<float> logits = h.prefill(seq);
  for (int step = 0; step < 6; ++step) {
    const int32_t tok = testing::argmax(logits);
    seq.tokens.push_back(tok);
    logits = h.step({{&seq, 1}})[0];
    std::vector<int32_t> all = seq.tokens;
    EXPECT_LE(rel_diff(logits, prefill(all, 0)), kTol) << "step " << step;
  }
}

TEST_F(MoeModel, BatchedMatchesAlone) {
  const auto a = random_prompt(33, 3), b = random_prompt(12, 4);
  Harness h(*model_, s_);
  Sequence sa(a), sb(b);
  const auto both = h.step({{&sa, int64_t(a.size())}, {&sb, int64_t(b.size())}});
  EXPECT_LE(rel_diff(both[0], prefill(a, 0)), kTol);
  EXPECT_LE(rel_diff(both[1], prefill(b, 0)), kTol);
}

}  // namespace
}  // namespace vtllm::models
