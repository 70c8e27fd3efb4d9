#include "models/params.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "../io/reference_params.h"
#include "models/registry.h"

namespace vtllm::models {
namespace {

const std::string kSource = std::string(VTLLM_SOURCE_DIR);

int64_t total(const std::vector<io::ParamSpec>& specs) { return io::param_totals(specs).parameters; }

// The models every registry class is exercised on: the oracle fixtures (saved by
// transformers' save_pretrained), the bundled default and the dense bench shapes.
// The MoE fixtures join when they have been generated (tools/oracle/README.md).
std::vector<std::string> model_dirs() {
  std::vector<std::string> dirs = {kSource + "/tests/fixtures/qwen3-tiny",
                                   kSource + "/tests/fixtures/qwen3_5-tiny-r2",
                                   kSource + "/tests/fixtures/qwen3_5-tiny-r3-vl",
                                   kSource + "/tests/fixtures/qwen3_5-tiny-hd48",
                                   kSource + "/models/tiny-qwen3.5",
                                   kSource + "/bench/models/qwen3_5-default-text",
                                   kSource + "/bench/models/qwen3_6-27b",
                                   kSource + "/bench/models/qwen3_6-35b-a3b"};
  for (const char* moe :
       {"/tests/fixtures/qwen3_5_moe-tiny", "/tests/fixtures/qwen3_5_moe-tiny-vl"})
    if (std::filesystem::exists(kSource + moe + "/config.json")) dirs.push_back(kSource + moe);
  return dirs;
}

TEST(DeclareParams, LayersDeclareExactlyTheReferenceEnumeration) {
  for (const std::string& dir : model_dirs()) {
    const io::ModelConfig c = load_model_config(dir);
    for (bool lm_only : {false, true}) {
      std::map<std::string, std::pair<std::vector<int64_t>, vt::DType>> want, got;
      for (const io::ParamSpec& p : io::testing::reference_params(c, lm_only))
        want[p.name] = {p.shape, p.dtype};
      for (const io::ParamSpec& p : declare_params(c, lm_only))
        EXPECT_TRUE(got.emplace(p.name, std::make_pair(p.shape, p.dtype)).second) << p.name;
      EXPECT_EQ(got, want) << dir << (lm_only ? " (language model only)" : "");
    }
  }
}

TEST(DeclareParams, BenchConfigCountsEqualTransformers) {
  // transformers 5.17.0 / torch 2.11 on the H200, 2026-11-30, each model built on the
  // meta device from the same config: `python3 tools/oracle/param_count.py bench/models`.
  const std::string bench = kSource + "/bench/models/";
  EXPECT_EQ(total(declare_params(load_model_config(bench + "qwen3_5-default-text"))), 8953803264);
  EXPECT_EQ(total(declare_params(load_model_config(bench + "qwen3_6-27b"))), 27356728560);
  EXPECT_EQ(total(declare_params(load_model_config(bench + "qwen3_6-35b-a3b"))), 35107181936);
}

TEST(DeclareParams, MoeBlockCountsByHand) {
  // One GDN layer and one full-attention layer, each with the sparse block: router E x H,
  // experts E x (2I x H + H x I), shared expert 3 x H x Is, its gate H.
  const std::string cfg = R"({"architectures": ["Qwen3_5MoeForCausalLM"],
      "model_type": "qwen3_5_moe_text", "vocab_size": 100, "hidden_size": 32,
      "num_hidden_layers": 2, "layer_types": ["linear_attention", "full_attention"],
      "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
      "linear_num_key_heads": 1, "linear_num_value_heads": 2, "linear_key_head_dim": 8,
      "linear_value_head_dim": 8, "num_experts": 6, "num_experts_per_tok": 2,
      "moe_intermediate_size": 4, "shared_expert_intermediate_size": 5})";
  const int64_t H = 32, E = 6, I = 4, Is = 5;
  const int64_t moe = E * H + E * (2 * I * H + H * I) + 3 * H * Is + H;
  // GDN: conv_dim 2*8 + 16 = 32: qkv 32xH, z 16xH, b/a 2xH each, conv 32x4, dt/A 2 each,
  // norm 8, out H x 16. Attention: q 2*16*2 x H, k/v 16 x H, o H x 32, q/k norm 16 each.
  const int64_t gdn = 32 * H + 16 * H + 2 * 2 * H + 32 * 4 + 2 * 2 + 8 + H * 16;
  const int64_t attn = 64 * H + 2 * 16 * H + H * 32 + 2 * 16;
  const int64_t want = 100 * H + gdn + attn + 2 * (moe + 2 * H) + H + 100 * H;
  EXPECT_EQ(total(declare_params(parse_model_config(cfg, "config.json"))), want);
}

TEST(DeclareParams, TiedEmbeddingsDeclareNoLmHead) {
  const std::string cfg = R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 1000,
      "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 16, "tie_word_embeddings": TIE})";
  auto with = [&](const char* tie) {
    std::string s = cfg;
    s.replace(s.find("TIE"), 3, tie);
    return declare_params(parse_model_config(s, "config.json"));
  };
  // Qwen3 by hand: per layer q 64x64, k/v 64x32 each, o 64x64, q/k norm 16 each, MLP 3x64x96, 2 norms.
  const int64_t layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 16 + 3 * 64 * 96 + 2 * 64;
  const int64_t untied = 1000 * 64 + 2 * layer + 64 + 1000 * 64;
  EXPECT_EQ(total(with("false")), untied);
  EXPECT_EQ(total(with("true")), untied - 1000 * 64);
  for (const io::ParamSpec& p : with("true")) EXPECT_NE(p.name, "lm_head.weight");
}

TEST(DeclareParams, UnknownClassNamesTheSupportedOnes) {
  const std::string cfg =
      R"({"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next"})";
  try {
    parse_model_config(cfg, "config.json");
    FAIL() << "an unbuilt class parsed";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Qwen3NextForCausalLM"), std::string::npos) << m;
    EXPECT_NE(m.find("Qwen3_5MoeForConditionalGeneration"), std::string::npos) << m;
  }
}

TEST(ParamDeclaration, RefusesANameTakenTwiceAndRecordsInOrder) {
  ParamDeclaration d(vt::DType::kBF16);
  EXPECT_FALSE(d.take("a.weight", {2, 3}).defined());
  d.take_stacked({{"b.weight", 4}, {"c.weight", 5}}, 3);
  ASSERT_EQ(d.specs().size(), 3u);
  EXPECT_EQ(d.specs()[1].name, "b.weight");
  EXPECT_EQ(d.specs()[2].shape, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(d.specs()[2].dtype, vt::DType::kBF16);
  EXPECT_THROW(d.take("a.weight", {2, 3}), Error);
  EXPECT_THROW(d.take("huge", {int64_t(1) << 40, int64_t(1) << 40}), Error);
}

}  // namespace
}  // namespace vtllm::models
