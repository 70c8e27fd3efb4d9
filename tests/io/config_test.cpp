#include "io/config.h"

#include <gtest/gtest.h>

#include "config_classes.h"

#include "expect_error.h"
#include "st_writer.h"

namespace vtllm::io {
namespace {

const std::string kBench = std::string(VTLLM_SOURCE_DIR) + "/bench/models/";

ModelConfig parse(const std::string& text) { return testing::parse_config(text); }

TEST(Config, Qwen3_5DefaultTextConfigTakesTransformersDefaults) {
  ModelConfig c = testing::load_config(kBench + "qwen3_5-default-text");
  EXPECT_EQ(c.arch, Architecture::kQwen3_5);
  EXPECT_FALSE(c.multimodal);
  EXPECT_FALSE(c.vision.has_value());
  EXPECT_EQ(c.dtype, vt::DType::kBF16);
  const TextConfig& t = c.text;
  EXPECT_EQ(t.vocab_size, 248320);
  EXPECT_EQ(t.hidden_size, 4096);
  EXPECT_EQ(t.intermediate_size, 12288);
  EXPECT_EQ(t.num_hidden_layers, 32);
  EXPECT_EQ(t.num_attention_heads, 16);
  EXPECT_EQ(t.num_key_value_heads, 4);
  EXPECT_EQ(t.head_dim, 256);
  EXPECT_EQ(t.max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(t.rms_norm_eps, 1e-6);
  EXPECT_FALSE(t.tie_word_embeddings);
  EXPECT_TRUE(t.attn_output_gate);
  EXPECT_DOUBLE_EQ(t.rope.rope_theta, 10000.0);  // the class default, not the 1e7 of real checkpoints
  EXPECT_DOUBLE_EQ(t.rope.partial_rotary_factor, 0.25);
  EXPECT_EQ(t.rotary_dim(), 64);
  EXPECT_EQ(t.rope.mrope_section, (std::vector<int64_t>{11, 11, 10}));
  ASSERT_TRUE(t.linear_attention);
  EXPECT_EQ(t.linear_attention->num_key_heads, 16);
  EXPECT_EQ(t.linear_attention->num_value_heads, 32);
  EXPECT_EQ(t.linear_attention->key_head_dim, 128);
  EXPECT_EQ(t.linear_attention->value_head_dim, 128);
  EXPECT_EQ(t.linear_attention->conv_kernel_dim, 4);
  EXPECT_FALSE(t.moe);
  ASSERT_EQ(t.layer_types.size(), 32u);
  for (size_t i = 0; i < 32; ++i)  // full attention at 3, 7, 11, ...
    EXPECT_EQ(t.layer_types[i], i % 4 == 3 ? LayerType::kFullAttention : LayerType::kLinearAttention) << i;
}

TEST(Config, Qwen3_6_27bReadsTextAndVisionConfigs) {
  ModelConfig c = testing::load_config(kBench + "qwen3_6-27b");
  EXPECT_EQ(c.architecture_class, "Qwen3_5ForConditionalGeneration");
  EXPECT_TRUE(c.multimodal);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.text.hidden_size, 5120);
  EXPECT_EQ(c.text.num_hidden_layers, 64);
  EXPECT_EQ(c.text.intermediate_size, 17408);
  EXPECT_EQ(c.text.num_attention_heads, 24);
  EXPECT_EQ(c.text.num_key_value_heads, 4);
  EXPECT_EQ(c.text.linear_attention->num_value_heads, 48);
  EXPECT_EQ(c.text.linear_attention->conv_dim(), 10240);
  EXPECT_DOUBLE_EQ(c.text.rope.rope_theta, 1e7);
  EXPECT_TRUE(c.text.rope.mrope_interleaved);
  EXPECT_EQ(c.text.max_position_embeddings, 262144);
  EXPECT_EQ(c.text.count_layers(LayerType::kFullAttention), 16);
  ASSERT_TRUE(c.vision);
  EXPECT_EQ(c.vision->out_hidden_size, 5120);
  EXPECT_EQ(c.vision->depth, 27);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{248044});
  EXPECT_EQ(c.image_token_id, 248056);
}

TEST(Config, Qwen3_6_35bReadsMoeFields) {
  ModelConfig c = testing::load_config(kBench + "qwen3_6-35b-a3b");
  EXPECT_EQ(c.arch, Architecture::kQwen3_5Moe);
  ASSERT_TRUE(c.text.moe);
  EXPECT_EQ(c.text.moe->num_experts, 256);
  EXPECT_EQ(c.text.moe->num_experts_per_tok, 8);
  EXPECT_EQ(c.text.moe->moe_intermediate_size, 512);
  EXPECT_EQ(c.text.moe->shared_expert_intermediate_size, 512);
  EXPECT_EQ(c.text.intermediate_size, 0);
  EXPECT_EQ(c.text.num_key_value_heads, 2);
  EXPECT_EQ(c.vision->out_hidden_size, 2048);
}

TEST(Config, MultimodalClassWithoutSubconfigsTakesDefaults) {
  ModelConfig c = parse(R"({"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe"})");
  EXPECT_EQ(c.text.hidden_size, 2048);
  EXPECT_EQ(c.text.num_hidden_layers, 40);
  EXPECT_EQ(c.vision->out_hidden_size, 3584);
  EXPECT_EQ(c.dtype, vt::DType::kF32);
  EXPECT_EQ(c.vision_end_token_id, 248054);
}

TEST(Config, TopLevelRopeKeysFoldIntoRopeParameters) {
  ModelConfig c = parse(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
      "rope_theta": 5e6, "partial_rotary_factor": 0.5, "head_dim": 128,
      "rope_parameters": {"rope_type": "default", "mrope_section": [16, 8, 8]}})");
  EXPECT_DOUBLE_EQ(c.text.rope.rope_theta, 5e6);
  EXPECT_DOUBLE_EQ(c.text.rope.partial_rotary_factor, 0.5);
  EXPECT_EQ(c.text.rotary_dim(), 64);
  // rope_parameters wins over the top level.
  c = parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "rope_theta": 5,
      "rope_parameters": {"rope_theta": 1000000}})");
  EXPECT_DOUBLE_EQ(c.text.rope.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.text.rope.partial_rotary_factor, 1.0);
  EXPECT_TRUE(c.text.rope.mrope_section.empty());
}

TEST(Config, LayerTypesFromIntervalAndLegacyNames) {
  ModelConfig c = parse(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
      "num_hidden_layers": 6, "full_attention_interval": 2})");
  EXPECT_EQ(c.text.count_layers(LayerType::kFullAttention), 3);
  EXPECT_EQ(c.text.layer_types[1], LayerType::kFullAttention);
  c = parse(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text", "num_hidden_layers": 2,
      "layer_types": ["mamba", "attention"]})");
  EXPECT_EQ(c.text.layer_types, (std::vector<LayerType>{LayerType::kLinearAttention, LayerType::kFullAttention}));
}

TEST(Config, Qwen3DefaultsAndSlidingWindowLayers) {
  ModelConfig c = parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"})");
  EXPECT_EQ(c.text.vocab_size, 151936);
  EXPECT_EQ(c.text.intermediate_size, 22016);
  EXPECT_EQ(c.text.num_key_value_heads, 32);
  EXPECT_EQ(c.text.head_dim, 128);
  EXPECT_FALSE(c.text.attn_output_gate);
  EXPECT_FALSE(c.text.sliding_window);
  EXPECT_EQ(c.text.count_layers(LayerType::kFullAttention), 32);
  c = parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 4,
      "use_sliding_window": true, "max_window_layers": 2, "num_key_value_heads": null})");
  EXPECT_EQ(*c.text.sliding_window, 4096);
  EXPECT_EQ(c.text.layer_types[1], LayerType::kFullAttention);
  EXPECT_EQ(c.text.layer_types[2], LayerType::kSlidingAttention);
  EXPECT_EQ(c.text.num_key_value_heads, 32);
}

TEST(Config, LlamaDerivesHeadDimAndEos) {
  ModelConfig c = parse(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
      "num_attention_heads": 16, "num_key_value_heads": 4, "torch_dtype": "float16",
      "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192}, "rope_theta": 500000.0,
      "tie_word_embeddings": true})");
  EXPECT_EQ(c.text.head_dim, 128);
  EXPECT_EQ(c.text.num_key_value_heads, 4);
  EXPECT_EQ(c.text.max_position_embeddings, 2048);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
  EXPECT_EQ(c.dtype, vt::DType::kF16);
  EXPECT_EQ(c.text.rope.rope_type, "llama3");
  EXPECT_DOUBLE_EQ(c.text.rope.factor, 32.0);
  EXPECT_EQ(c.text.rope.original_max_position_embeddings, 8192);
  EXPECT_DOUBLE_EQ(c.text.rope.rope_theta, 500000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
}

TEST(Config, RejectsAModelTypeTheClassDoesNotTakeOrIoDoesNotRead) {
  const ConfigClass qwen3{"Qwen3ForCausalLM", false, {"qwen3"}};
  EXPECT_ERROR_WITH(parse_model_config(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "llama"})",
                                       "config.json", qwen3),
                    "config.json", "model_type", "'llama' does not match architecture Qwen3ForCausalLM");
  const ConfigClass gpt2{"GPT2LMHeadModel", false, {"gpt2"}};
  EXPECT_ERROR_WITH(parse_model_config(R"({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"})",
                                       "config.json", gpt2),
                    "model_type", "'gpt2' is not a config family");
  EXPECT_ERROR_WITH(parse_model_config(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3"})",
                                       "config.json", qwen3),
                    "architectures", "'Qwen3_5ForCausalLM' is not the class Qwen3ForCausalLM");
}

// transformers 5.17 loads a Qwen3.5 whose rope_parameters has no mrope_section and whose
// head_dim is not 256: the rotary module's default [11, 11, 10] applies, clipped to the
// rotary dims there are (qwen3_5.md §7.5).
TEST(Config, Qwen3_5MropeSectionDefaultsWhateverTheHeadDim) {
  for (int64_t head_dim : {48, 32}) {
    const ModelConfig c = parse(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
        "head_dim": )" + std::to_string(head_dim) + R"(, "rope_parameters": {"rope_theta": 10000.0}})");
    EXPECT_EQ(c.text.rotary_dim(), head_dim / 4);
    EXPECT_EQ(c.text.rope.mrope_section, (std::vector<int64_t>{11, 11, 10}));
  }
  const ModelConfig odd = parse(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
      "rope_parameters": {"mrope_section": [10, 10, 10]}})");
  EXPECT_EQ(odd.text.rope.mrope_section, (std::vector<int64_t>{10, 10, 10}));
}

// An odd rotary dim (head_dim 36 x 0.25 = 9) runs in transformers (it rotates 10 dims);
// one that rounds past head_dim (Qwen3, head_dim 33, full rotary) fails there and here.
TEST(Config, OddRotaryDimIsAcceptedUnlessItRoundsPastHeadDim) {
  const ModelConfig c =
      parse(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
      "head_dim": 36})");
  EXPECT_EQ(c.text.rotary_dim(), 9);
  EXPECT_ERROR_WITH(
      parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 33})"),
      "rotary dim 33", "at most head_dim");
}

TEST(Config, RejectsMissingRequiredFields) {
  EXPECT_ERROR_WITH(parse(R"({"model_type": "qwen3"})"), "config.json", "architectures", "required field is missing");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3ForCausalLM"]})"), "model_type", "required field is missing");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "llama"})"), "model_type",
                    "does not match");
}

TEST(Config, RejectsWrongFieldTypesNamingThePath) {
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
      "text_config": {"hidden_size": "abc"}})"),
                    "config.json", "text_config.hidden_size", "expected an integer", "\"abc\"");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
      "vision_config": [1]})"),
                    "vision_config", "expected a JSON object");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "dtype": "int4"})"),
                    "dtype", "unsupported dtype 'int4'");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
      "tie_word_embeddings": 1})"),
                    "tie_word_embeddings", "expected true or false");
}

TEST(Config, RejectsIntegersOutsideInt64) {
  // Found by config_fuzz: a float past int64's range was converted before the range check.
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
      "hidden_size": 3e62})"),
                    "hidden_size", "expected an integer");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
      "hidden_size": 18446744073709551615})"),
                    "hidden_size", "expected an integer");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
      "hidden_size": 64.5})"),
                    "hidden_size", "expected an integer");
}

TEST(Config, RejectsInconsistentValues) {
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
      "num_attention_heads": 12, "num_key_value_heads": 5})"),
                    "num_key_value_heads", "does not divide");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
      "num_hidden_layers": 3, "layer_types": ["full_attention"]})"),
                    "layer_types", "has 1 entries for 3 layers");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
      "num_hidden_layers": 1, "layer_types": ["sliding_attention"]})"),
                    "layer_types", "'sliding_attention'");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
      "hidden_size": 0})"),
                    "hidden_size", "must be positive");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
      "rope_parameters": {"mrope_section": [10, 10]}})"),
                    "mrope_section", "has 2 entries");
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3_5MoeForCausalLM"], "model_type": "qwen3_5_moe_text",
      "num_experts": 4})"),
                    "num_experts_per_tok", "exceeds num_experts 4");
}

TEST(Config, RejectsMalformedJsonNamingTheFile) {
  EXPECT_ERROR_WITH(parse(R"({"architectures": ["Qwen3ForCausalLM"],)"), "config.json", "malformed JSON");
  EXPECT_ERROR_WITH(parse("[]"), "config.json", "not a JSON object");
  EXPECT_ERROR_WITH(testing::load_config("/nonexistent-dir"), "/nonexistent-dir/config.json", "cannot open");
}

TEST(GenerationConfig, ReadsEosListAndSamplingDefaults) {
  GenerationConfig g = parse_generation_config(R"({"bos_token_id": 248044, "do_sample": true,
      "eos_token_id": [248046, 248044], "pad_token_id": 248044, "temperature": 1.0, "top_k": 20, "top_p": 0.95,
      "transformers_version": "5.17.0"})",
                                               "generation_config.json");
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{248046, 248044}));
  EXPECT_EQ(*g.top_k, 20);
  EXPECT_DOUBLE_EQ(*g.top_p, 0.95);
  EXPECT_TRUE(*g.do_sample);
  EXPECT_FALSE(g.repetition_penalty);
  EXPECT_EQ(parse_generation_config(R"({"eos_token_id": 7})", "g").eos_token_ids, std::vector<int64_t>{7});
  EXPECT_ERROR_WITH(parse_generation_config(R"({"eos_token_id": "x"})", "generation_config.json"),
                    "generation_config.json", "eos_token_id");
  testing::TempDir dir;
  EXPECT_TRUE(load_generation_config(dir.str()).eos_token_ids.empty());
}

}  // namespace
}  // namespace vtllm::io
