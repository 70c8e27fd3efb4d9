#include "io/weight_loader.h"

#include <gtest/gtest.h>

#include "config_classes.h"
#include "reference_params.h"

#include <cstring>

#include "expect_error.h"
#include "st_writer.h"
#include "vt/stream.h"

namespace vtllm::io {
namespace {

using testing::random_bytes;
using testing::safetensors_bytes;
using testing::StTensor;
using testing::TempDir;
using testing::write_file;

const std::string kFixtures = std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/";

// A small Qwen3.5-MoE ConditionalGeneration: 4 layers (3 GDN + 1 attention), 4 experts.
const char* kTinyMoe = R"({"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
  "dtype": "bfloat16",
  "text_config": {"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 4, "num_attention_heads": 2,
    "num_key_value_heads": 1, "head_dim": 8, "linear_num_key_heads": 1, "linear_num_value_heads": 2,
    "linear_key_head_dim": 4, "linear_value_head_dim": 4, "num_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 6, "shared_expert_intermediate_size": 5,
    "rope_parameters": {"partial_rotary_factor": 0.25, "mrope_section": [1, 0, 0]}},
  "vision_config": {"depth": 1, "hidden_size": 8, "intermediate_size": 12, "num_heads": 2, "out_hidden_size": 16,
    "num_position_embeddings": 4, "patch_size": 2}})";

ModelConfig tiny_moe() { return testing::parse_config(kTinyMoe); }

// One random BF16 tensor per spec, named with `rename` applied.
std::vector<StTensor> tensors_for(const std::vector<ParamSpec>& specs,
                                  const std::function<std::string(const std::string&)>& rename) {
  std::vector<StTensor> out;
  uint32_t seed = 100;
  for (const ParamSpec& s : specs)
    out.push_back({rename(s.name), "BF16", s.shape, random_bytes(size_t(s.numel()) * 2, seed++)});
  return out;
}

std::string bytes_of(const vt::Tensor& t) {
  return std::string(static_cast<const char*>(t.data_ptr()), t.nbytes());
}

std::string strip_language_model(const std::string& n) {
  const std::string p = "model.language_model.";
  return n.rfind(p, 0) == 0 ? "model." + n.substr(p.size()) : n;
}

TEST(WeightLoader, LoadsEveryTensorZeroCopyAcceptingTheCausalLmSpelling) {
  TempDir dir;
  const ModelConfig c = tiny_moe();
  const auto specs = testing::reference_params(c);
  auto ts = tensors_for(specs, strip_language_model);
  ts.push_back({"mtp.fc.weight", "BF16", {16, 32}, random_bytes(1024, 7)});
  ts.push_back({"mtp.layers.0.input_layernorm.weight", "BF16", {16}, random_bytes(32, 8)});
  write_file(dir / "model.safetensors", safetensors_bytes(ts));

  vt::Stream s(vt::Device::cpu(), 2);
  Weights w = load_weights(s, Checkpoint::open(dir.str()), c, specs, {.progress = LoadOptions::Progress::kNever});
  ASSERT_EQ(w.tensors.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const vt::Tensor& t = w.at(specs[i].name);
    EXPECT_EQ(t.shape(), specs[i].shape) << specs[i].name;
    EXPECT_EQ(t.dtype(), vt::DType::kBF16);
    EXPECT_EQ(bytes_of(t), ts[i].bytes) << specs[i].name;
  }
  EXPECT_EQ(w.summary.loaded, int64_t(specs.size()));
  EXPECT_EQ(w.summary.zero_copy, int64_t(specs.size()));
  EXPECT_EQ(w.summary.skipped_total(), 2);
  EXPECT_EQ(w.summary.skipped.begin()->first, "mtp draft head (unused by transformers)");
  EXPECT_NE(w.summary.str().find("skipped 2"), std::string::npos) << w.summary.str();
  EXPECT_ERROR_WITH(w.at("nope"), "no weight named 'nope'");
}

TEST(WeightLoader, TensorsOutliveTheCheckpointObject) {
  TempDir dir;
  const ModelConfig c = tiny_moe();
  const auto specs = testing::reference_params(c);
  auto ts = tensors_for(specs, [](const std::string& n) { return n; });
  write_file(dir / "model.safetensors", safetensors_bytes(ts));
  vt::Stream s(vt::Device::cpu(), 1);
  Weights w;
  {
    Checkpoint ck = Checkpoint::open(dir.str());
    w = load_weights(s, ck, c, specs, {.progress = LoadOptions::Progress::kNever});
  }
  EXPECT_EQ(bytes_of(w.at(specs.back().name)), ts.back().bytes);
}

TEST(WeightLoader, FusesPerExpertTensors) {
  TempDir dir;
  const ModelConfig c = tiny_moe();
  const auto specs = testing::reference_params(c, true);
  std::vector<StTensor> ts;
  uint32_t seed = 1;
  const int64_t E = 4, I = 6, H = 16;
  for (const ParamSpec& s : specs) {
    if (s.name.find(".mlp.experts.") == std::string::npos) {
      ts.push_back({s.name, "BF16", s.shape, random_bytes(size_t(s.numel()) * 2, seed++)});
      continue;
    }
    const std::string base = s.name.substr(0, s.name.rfind('.') + 1);  // "...mlp.experts."
    const bool gate_up = s.name.ends_with("gate_up_proj");
    for (int64_t e = 0; e < E; ++e) {
      if (gate_up) {
        ts.push_back({base + std::to_string(e) + ".gate_proj.weight", "BF16", {I, H}, random_bytes(I * H * 2, seed++)});
        ts.push_back({base + std::to_string(e) + ".up_proj.weight", "BF16", {I, H}, random_bytes(I * H * 2, seed++)});
      } else {
        ts.push_back({base + std::to_string(e) + ".down_proj.weight", "BF16", {H, I}, random_bytes(H * I * 2, seed++)});
      }
    }
  }
  ts.push_back({"model.visual.pos_embed.weight", "BF16", {4, 8}, random_bytes(64, 9)});
  write_file(dir / "model.safetensors", safetensors_bytes(ts));

  vt::Stream s(vt::Device::cpu(), 2);
  Weights w = load_weights(s, Checkpoint::open(dir.str()), c, specs,
                           {.language_model_only = true, .progress = LoadOptions::Progress::kNever});
  EXPECT_EQ(w.summary.fused, 8);  // 4 layers x (gate_up, down)
  EXPECT_EQ(w.summary.skipped.at("vision tower (--language-model-only)"), 1);
  // Expected fused bytes assembled by byte offsets: expert e's gate rows, then its up rows.
  auto piece = [&](const std::string& name) {
    for (const StTensor& t : ts)
      if (t.name == name) return t.bytes;
    ADD_FAILURE() << name;
    return std::string();
  };
  const std::string p = "model.language_model.layers.2.mlp.experts.";
  std::string want_gate_up, want_down;
  for (int64_t e = 0; e < E; ++e) {
    want_gate_up += piece(p + std::to_string(e) + ".gate_proj.weight") + piece(p + std::to_string(e) + ".up_proj.weight");
    want_down += piece(p + std::to_string(e) + ".down_proj.weight");
  }
  EXPECT_EQ(w.at(p + "gate_up_proj").shape(), (vt::Shape{E, 2 * I, H}));
  EXPECT_EQ(bytes_of(w.at(p + "gate_up_proj")), want_gate_up);
  EXPECT_EQ(bytes_of(w.at(p + "down_proj")), want_down);
}

TEST(WeightLoader, ReportsEveryProblemInOneError) {
  TempDir dir;
  const ModelConfig c = tiny_moe();
  const auto specs = testing::reference_params(c);
  auto ts = tensors_for(specs, [](const std::string& n) { return n; });
  const std::string missing = ts[3].name;
  ts.erase(ts.begin() + 3);
  ts.push_back({"model.language_model.layers.0.bogus.weight", "BF16", {2}, random_bytes(4, 1)});
  for (StTensor& t : ts) {
    if (t.name == "lm_head.weight") t = {t.name, "BF16", {63, 16}, random_bytes(63 * 16 * 2, 2)};
    if (t.name == "model.language_model.norm.weight") t = {t.name, "I16", {16}, random_bytes(32, 3)};
    if (t.name == "model.language_model.layers.1.linear_attn.A_log") t = {t.name, "F64", {2}, random_bytes(16, 4)};
  }
  // The same parameter under both spellings.
  ts.push_back({"model.layers.0.input_layernorm.weight", "BF16", {16}, random_bytes(32, 5)});
  write_file(dir / "model.safetensors", safetensors_bytes(ts));
  vt::Stream s(vt::Device::cpu(), 1);
  EXPECT_ERROR_WITH(load_weights(s, Checkpoint::open(dir.str()), c, specs, {}), dir.str(),
                    "does not match Qwen3_5MoeForConditionalGeneration (6 problems)",
                    "missing tensor '" + missing + "'",
                    "unexpected tensor 'model.language_model.layers.0.bogus.weight'",
                    "tensor 'lm_head.weight' has shape [63, 16], expected [64, 16]",
                    "tensor 'model.language_model.norm.weight' has dtype I16, which vtllm cannot hold",
                    "'model.language_model.layers.1.linear_attn.A_log' has dtype F64",
                    "parameter 'model.language_model.layers.0.input_layernorm.weight' appears twice");
}

TEST(WeightLoader, ConvertsOtherFloatDtypesAndRejectsIntegers) {
  TempDir dir;
  const ModelConfig c = tiny_moe();
  const auto specs = testing::reference_params(c, true);
  auto ts = tensors_for(specs, [](const std::string& n) { return n; });
  const std::string a_log = "model.language_model.layers.0.linear_attn.A_log";
  const std::vector<float> f32 = {1.0f, -2.5f, 1.00390625f, 3.0e-3f};  // 1+2^-8 is a bf16 tie: rounds to even
  for (StTensor& t : ts)
    if (t.name == a_log) t = {t.name, "F32", {2}, testing::f32_bytes({f32[0], f32[2]})};
  write_file(dir / "model.safetensors", safetensors_bytes(ts));
  vt::Stream s(vt::Device::cpu(), 1);
  Weights w = load_weights(s, Checkpoint::open(dir.str()), c, specs,
                           {.language_model_only = true, .progress = LoadOptions::Progress::kNever});
  EXPECT_EQ(w.summary.converted, 1);
  const vt::BF16* v = w.at(a_log).data<vt::BF16>();
  EXPECT_EQ(v[0].bits, 0x3f80);  // 1.0
  EXPECT_EQ(v[1].bits, 0x3f80);  // 1 + 2^-8 ties to the even 1.0

  for (StTensor& t : ts)
    if (t.name == a_log) t = {t.name, "I32", {2}, random_bytes(8, 1)};
  write_file(dir / "model.safetensors", safetensors_bytes(ts));
  EXPECT_ERROR_WITH(load_weights(s, Checkpoint::open(dir.str()), c, specs, {.language_model_only = true}),
                    "tensor '" + a_log + "' has dtype I32, expected BF16");
}

TEST(WeightLoader, LoadsATwoShardCheckpoint) {
  TempDir dir;
  const ModelConfig c = tiny_moe();
  const auto specs = testing::reference_params(c);
  auto ts = tensors_for(specs, [](const std::string& n) { return n; });
  const size_t half = ts.size() / 2;
  write_file(dir / "model-00001-of-00002.safetensors",
             safetensors_bytes(std::vector<StTensor>(ts.begin(), ts.begin() + long(half))));
  write_file(dir / "model-00002-of-00002.safetensors",
             safetensors_bytes(std::vector<StTensor>(ts.begin() + long(half), ts.end())));
  std::string index = R"({"weight_map": {)";
  for (size_t i = 0; i < ts.size(); ++i)
    index += (i ? "," : "") + ("\"" + ts[i].name + "\": \"model-0000") + (i < half ? "1" : "2") + "-of-00002.safetensors\"";
  write_file(dir / "model.safetensors.index.json", index + "}}");
  vt::Stream s(vt::Device::cpu(), 2);
  Weights w = load_model_weights(s, dir.str(), c, testing::reference_params(c), {.progress = LoadOptions::Progress::kNever});
  ASSERT_EQ(w.tensors.size(), ts.size());
  EXPECT_EQ(bytes_of(w.at(ts.front().name)), ts.front().bytes);
  EXPECT_EQ(bytes_of(w.at(ts.back().name)), ts.back().bytes);
}

// The oracle fixtures were written by transformers' save_pretrained; a saved file holds
// each parameter once (a tied lm_head is left out), so its element count is
// transformers' own parameter count.
TEST(WeightLoader, LoadsSavePretrainedFixtures) {
  for (const char* name : {"qwen3-tiny", "qwen3_5-tiny-r2", "qwen3_5-tiny-r3-vl"}) {
    SCOPED_TRACE(name);
    const std::string dir = kFixtures + name;
    const ModelConfig c = testing::load_config(dir);
    const auto specs = testing::reference_params(c);
    const Checkpoint ck = Checkpoint::open(dir);
    int64_t file_params = 0;
    for (const auto& [n, e] : ck.tensors()) file_params += e.tensor->numel();
    EXPECT_EQ(param_totals(specs).parameters, file_params);
    vt::Stream s(vt::Device::cpu(), 2);
    Weights w = load_weights(s, ck, c, specs, {.progress = LoadOptions::Progress::kNever});
    EXPECT_EQ(w.summary.loaded, int64_t(specs.size()));
    EXPECT_EQ(w.summary.skipped_total(), 0);
    const ParamSpec& first = specs.front();
    EXPECT_EQ(bytes_of(w.at(first.name)),
              std::string(reinterpret_cast<const char*>(ck.find(first.name)->file->data(*ck.find(first.name)->tensor)),
                          size_t(first.numel()) * 2));
  }
}

TEST(WeightLoader, MultimodalCheckpointLoadsIntoTheCausalLmClass) {
  const std::string dir = kFixtures + "qwen3_5-tiny-r3-vl";
  ModelConfig c = testing::load_config(dir);
  ModelConfig text_only = testing::parse_config(
      R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5", "text_config": {"vocab_size": 512,
      "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 8, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 64, "linear_num_key_heads": 2, "linear_num_value_heads": 6,
      "linear_key_head_dim": 32, "linear_value_head_dim": 32, "dtype": "bfloat16",
      "rope_parameters": {"mrope_section": [3, 3, 2]}}})");
  vt::Stream s(vt::Device::cpu(), 1);
  Weights w = load_model_weights(s, dir, text_only, testing::reference_params(text_only), {.progress = LoadOptions::Progress::kNever});
  const int64_t vision_tensors = int64_t(testing::reference_params(c).size() - testing::reference_params(c, true).size());
  EXPECT_EQ(w.summary.skipped.at("vision tower (unused by a CausalLM class)"), vision_tensors);
  EXPECT_TRUE(w.tensors.count("model.layers.7.self_attn.q_proj.weight"));
}

TEST(WeightLoader, TiedLmHeadInTheFileIsSkipped) {
  TempDir dir;
  const ModelConfig c = testing::load_config(kFixtures + "qwen3-tiny");
  ASSERT_TRUE(c.tie_word_embeddings);
  const auto specs = testing::reference_params(c);
  auto ts = tensors_for(specs, [](const std::string& n) { return n; });
  ts.push_back({"lm_head.weight", "BF16", {512, 64}, random_bytes(512 * 64 * 2, 3)});
  write_file(dir / "model.safetensors", safetensors_bytes(ts));
  vt::Stream s(vt::Device::cpu(), 1);
  Weights w = load_weights(s, Checkpoint::open(dir.str()), c, specs, {.progress = LoadOptions::Progress::kNever});
  EXPECT_EQ(w.summary.skipped.at("lm_head (tied to embed_tokens)"), 1);
  EXPECT_FALSE(w.tensors.count("lm_head.weight"));
}

TEST(WeightLoader, LoadFormatNames) {
  EXPECT_EQ(load_format_from_name("auto"), LoadFormat::kAuto);
  EXPECT_EQ(load_format_from_name("dummy"), LoadFormat::kDummy);
  EXPECT_ERROR_WITH(load_format_from_name("gguf"), "unknown load format 'gguf'");
}

}  // namespace
}  // namespace vtllm::io
