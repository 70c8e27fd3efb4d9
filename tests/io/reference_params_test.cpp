#include <gtest/gtest.h>

#include "config_classes.h"
#include "reference_params.h"

#include <set>

namespace vtllm::io {
namespace {

const std::string kBench = std::string(VTLLM_SOURCE_DIR) + "/bench/models/";

// The test reference enumeration (reference_params.h) against closed-form counts and
// transformers' own counts; tests/models/params_test.cpp holds the models' declarations
// equal to it.

// Closed-form parameter counts written from qwen3_5.md §3, per layer kind,
// independently of the reference enumeration.
int64_t qwen3_5_text_count(const TextConfig& t, bool tied) {
  const int64_t H = t.hidden_size, V = t.vocab_size, D = t.head_dim;
  const auto& la = *t.linear_attention;
  const int64_t kd = la.num_key_heads * la.key_head_dim, vd = la.num_value_heads * la.value_head_dim;
  const int64_t conv = 2 * kd + vd, Hv = la.num_value_heads;
  const int64_t gdn = H * conv + H * vd + 2 * H * Hv + conv * la.conv_kernel_dim + 2 * Hv + la.value_head_dim + vd * H;
  const int64_t attn = H * t.num_attention_heads * D * 2 + 2 * H * t.num_key_value_heads * D +
                       t.num_attention_heads * D * H + 2 * D;
  int64_t mlp = 3 * H * t.intermediate_size;
  if (t.moe) {
    const int64_t E = t.moe->num_experts, I = t.moe->moe_intermediate_size;
    mlp = E * H + E * 2 * I * H + E * H * I + 3 * H * t.moe->shared_expert_intermediate_size + H;
  }
  const int64_t n_fa = t.count_layers(LayerType::kFullAttention);
  const int64_t n_la = t.num_hidden_layers - n_fa;
  return V * H + n_la * gdn + n_fa * attn + t.num_hidden_layers * (mlp + 2 * H) + H + (tied ? 0 : V * H);
}

int64_t qwen3_5_vision_count(const VisionConfig& v) {
  const int64_t h = v.hidden_size, i = v.intermediate_size, m = h * v.spatial_merge_size * v.spatial_merge_size;
  const int64_t patch = h * v.in_channels * v.temporal_patch_size * v.patch_size * v.patch_size + h;
  const int64_t block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (i * h + i) + (h * i + h);
  return patch + v.num_position_embeddings * h + v.depth * block + 2 * h + (m * m + m) + (m * v.out_hidden_size + v.out_hidden_size);
}

int64_t total(const std::vector<ParamSpec>& specs) { return param_totals(specs).parameters; }

TEST(ReferenceParams, BenchConfigsMatchTheClosedFormCount) {
  for (const char* name : {"qwen3_5-default-text", "qwen3_6-27b", "qwen3_6-35b-a3b"}) {
    ModelConfig c = testing::load_config(kBench + name);
    int64_t want = qwen3_5_text_count(c.text, c.tie_word_embeddings);
    if (c.multimodal) want += qwen3_5_vision_count(*c.vision);
    EXPECT_EQ(total(testing::reference_params(c)), want) << name;
  }
}

TEST(ReferenceParams, BenchConfigCountsEqualTransformers) {
  // transformers 5.17.0 / torch 2.11 on the H200, 2026-11-30, each model built on the
  // meta device from the same config: `python3 tools/oracle/param_count.py bench/models`.
  EXPECT_EQ(total(testing::reference_params(testing::load_config(kBench + "qwen3_5-default-text"))), 8953803264);
  EXPECT_EQ(total(testing::reference_params(testing::load_config(kBench + "qwen3_6-27b"))), 27356728560);
  EXPECT_EQ(total(testing::reference_params(testing::load_config(kBench + "qwen3_6-35b-a3b"))), 35107181936);
}

TEST(ReferenceParams, LanguageModelOnlyDropsExactlyTheVisionTower) {
  ModelConfig c = testing::load_config(kBench + "qwen3_6-27b");
  auto all = testing::reference_params(c);
  auto lm = testing::reference_params(c, true);
  EXPECT_EQ(total(all) - total(lm), qwen3_5_vision_count(*c.vision));
  for (const ParamSpec& p : lm) EXPECT_NE(p.name.rfind("model.visual.", 0), 0u) << p.name;
}

TEST(ReferenceParams, NamesFollowTheClassPrefixAndAreUnique) {
  ModelConfig mm = testing::load_config(kBench + "qwen3_6-35b-a3b");
  auto specs = testing::reference_params(mm);
  std::set<std::string> names;
  for (const ParamSpec& p : specs) EXPECT_TRUE(names.insert(p.name).second) << p.name;
  EXPECT_TRUE(names.count("model.language_model.layers.0.linear_attn.in_proj_qkv.weight"));
  EXPECT_TRUE(names.count("model.language_model.layers.3.self_attn.q_norm.weight"));
  EXPECT_TRUE(names.count("model.language_model.layers.39.mlp.experts.gate_up_proj"));
  EXPECT_TRUE(names.count("model.visual.merger.linear_fc2.bias"));
  EXPECT_TRUE(names.count("lm_head.weight"));
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ParamSpec& p : specs) {
    EXPECT_EQ(p.dtype, vt::DType::kBF16);
    shapes[p.name] = p.shape;
  }
  EXPECT_EQ(shapes["model.language_model.layers.0.mlp.experts.gate_up_proj"], (std::vector<int64_t>{256, 1024, 2048}));
  EXPECT_EQ(shapes["model.language_model.layers.0.mlp.experts.down_proj"], (std::vector<int64_t>{256, 2048, 512}));
  EXPECT_EQ(shapes["model.language_model.layers.0.linear_attn.conv1d.weight"], (std::vector<int64_t>{8192, 1, 4}));
  EXPECT_EQ(shapes["model.language_model.layers.3.self_attn.q_proj.weight"], (std::vector<int64_t>{8192, 2048}));
  EXPECT_EQ(shapes["model.language_model.layers.0.mlp.shared_expert_gate.weight"], (std::vector<int64_t>{1, 2048}));
  ModelConfig text = testing::load_config(kBench + "qwen3_5-default-text");
  EXPECT_EQ(testing::reference_params(text).front().name, "model.embed_tokens.weight");
}

TEST(ReferenceParams, LlamaBiasesFollowTheFlags) {
  auto count = [](const char* flags) {
    std::string s = std::string(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 10,
        "hidden_size": 8, "intermediate_size": 12, "num_hidden_layers": 1, "num_attention_heads": 2)") + flags + "}";
    return total(testing::reference_params(testing::parse_config(s)));
  };
  const int64_t base = count("");
  EXPECT_EQ(base, 10 * 8 + (4 * 8 * 8 + 3 * 8 * 12 + 2 * 8) + 8 + 10 * 8);  // no q/k norm in Llama
  EXPECT_EQ(count(R"(, "attention_bias": true)") - base, 4 * 8);
  EXPECT_EQ(count(R"(, "mlp_bias": true)") - base, 12 + 12 + 8);
}

TEST(ReferenceParams, BytesPerDtype) {
  ModelConfig c = testing::load_config(kBench + "qwen3_6-27b");
  ParamTotals t = param_totals(testing::reference_params(c));
  ASSERT_EQ(t.bytes.size(), 1u);
  EXPECT_EQ(t.bytes.at(vt::DType::kBF16), uint64_t(t.parameters) * 2);
}

}  // namespace
}  // namespace vtllm::io
