#include "io/dummy_weights.h"

#include <gtest/gtest.h>

#include "config_classes.h"
#include "reference_params.h"

#include <cmath>

#include "expect_error.h"

namespace vtllm::io {
namespace {

ModelConfig tiny(const char* dtype) {
  return testing::parse_config(std::string(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
      "vocab_size": 3000, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "dtype": ")") + dtype + "\"}");
}

Weights make(const ModelConfig& c, uint64_t seed, int threads) {
  vt::Stream s(vt::Device::cpu(), threads);
  return dummy_weights(s, testing::reference_params(c), {.dummy_seed = seed, .progress = LoadOptions::Progress::kNever});
}

std::string bytes_of(const vt::Tensor& t) { return std::string(static_cast<const char*>(t.data_ptr()), t.nbytes()); }

TEST(DummyWeights, ShapesAndDtypesFollowTheSpecs) {
  const ModelConfig c = tiny("bfloat16");
  Weights w = make(c, 1, 2);
  const auto specs = testing::reference_params(c);
  ASSERT_EQ(w.tensors.size(), specs.size());
  for (const ParamSpec& s : specs) {
    EXPECT_EQ(w.at(s.name).shape(), s.shape) << s.name;
    EXPECT_EQ(w.at(s.name).dtype(), vt::DType::kBF16);
  }
  EXPECT_EQ(w.summary.bytes, uint64_t(param_totals(specs).parameters) * 2);
}

TEST(DummyWeights, SameSeedSameBytesWhateverTheThreadCount) {
  const ModelConfig c = tiny("float32");
  Weights a = make(c, 42, 1), b = make(c, 42, 4), other = make(c, 43, 4);
  const std::string name = "model.embed_tokens.weight";
  EXPECT_EQ(bytes_of(a.at(name)), bytes_of(b.at(name)));
  EXPECT_NE(bytes_of(a.at(name)), bytes_of(other.at(name)));
  // Two parameters of one shape get different values.
  EXPECT_NE(bytes_of(a.at("model.layers.0.self_attn.k_proj.weight")),
            bytes_of(a.at("model.layers.0.self_attn.v_proj.weight")));
}

TEST(DummyWeights, UniformInTheVllmRange) {
  Weights w = make(tiny("float32"), 7, 2);
  const vt::Tensor& t = w.at("model.embed_tokens.weight");  // 192k values
  const float* v = t.data<float>();
  double sum = 0, sq = 0, lo = 1, hi = -1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    sum += v[i];
    sq += double(v[i]) * v[i];
    lo = std::min(lo, double(v[i]));
    hi = std::max(hi, double(v[i]));
  }
  const double n = double(t.numel()), r = kDummyWeightRange;
  EXPECT_GE(lo, -r);
  EXPECT_LT(hi, r);
  EXPECT_GT(hi - lo, 1.99 * r);  // the range is covered
  // Uniform on [-r, r): mean 0 (sd of the mean r/sqrt(3n)), variance r^2/3.
  EXPECT_NEAR(sum / n, 0.0, 5 * r / std::sqrt(3 * n));
  EXPECT_NEAR(sq / n / (r * r / 3), 1.0, 0.02);
}

TEST(DummyWeights, Bf16IsTheRoundedF32Value) {
  Weights w32 = make(tiny("float32"), 5, 2), w16 = make(tiny("bfloat16"), 5, 3);
  const std::string name = "model.layers.1.mlp.down_proj.weight";
  const float* f = w32.at(name).data<float>();
  const vt::BF16* b = w16.at(name).data<vt::BF16>();
  for (int64_t i = 0; i < w32.at(name).numel(); ++i) {
    ASSERT_EQ(f[i], dummy_value(5, name, uint64_t(i))) << i;
    // Round-to-nearest-even written out on the bits, not through vt::f32_to_bf16.
    uint32_t u;
    std::memcpy(&u, &f[i], 4);
    const uint32_t lsb = (u >> 16) & 1u;
    ASSERT_EQ(b[i].bits, uint16_t((u + 0x7fffu + lsb) >> 16)) << i;
  }
}

TEST(DummyWeights, RefusesNonFloatDtypes) {
  std::vector<ParamSpec> specs = {{"ids", {4}, vt::DType::kI32}};
  vt::Stream s(vt::Device::cpu(), 1);
  EXPECT_ERROR_WITH(dummy_weights(s, specs, {}), "parameter 'ids'", "i32");
}

TEST(DummyWeights, LoadModelWeightsNeedsOnlyTheConfig) {
  vt::Stream s(vt::Device::cpu(), 2);
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/bench/models/qwen3_5-default-text";
  // The real shapes are 9e9 parameters; check the dispatch on a shrunken copy of the config.
  ModelConfig c = testing::load_config(dir);
  c.text.vocab_size = 32;
  c.text.hidden_size = 8;
  c.text.intermediate_size = 8;
  c.text.num_hidden_layers = 4;
  c.text.layer_types.resize(4);
  c.text.head_dim = 4;
  c.text.linear_attention->key_head_dim = c.text.linear_attention->value_head_dim = 2;
  Weights w = load_model_weights(s, dir, c, testing::reference_params(c), {.format = LoadFormat::kDummy, .progress = LoadOptions::Progress::kNever});
  EXPECT_EQ(w.tensors.size(), testing::reference_params(c).size());
  EXPECT_EQ(w.at("model.layers.3.self_attn.q_proj.weight").shape(), (vt::Shape{16 * 4 * 2, 8}));
}

}  // namespace
}  // namespace vtllm::io
