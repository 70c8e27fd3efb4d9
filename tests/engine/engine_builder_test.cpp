#include "engine/engine_builder.h"

#include <gtest/gtest.h>

#include <string>

#include "base/error.h"

namespace vtllm::engine {
namespace {

const std::string kModel = std::string(VTLLM_SOURCE_DIR) + "/models/tiny-qwen3.5";

std::string error_of(const EngineArgs& a) {
  try {
    build_engine(a);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(EngineBuilder, BuildsTheBundledModelOnTheCpu) {
  EngineArgs a;
  a.dir = kModel;
  a.max_num_seqs = 4;
  a.quiet = true;
  EngineParts p = build_engine(a);
  ASSERT_TRUE(p.runner);
  EXPECT_TRUE(p.hybrid);
  EXPECT_TRUE(p.tokenizer.has_value());
  EXPECT_EQ(p.engine.scheduler.max_model_len, p.model_config.text.max_position_embeddings);
  // min(max_num_seqs, 16) full-length requests + the null block.
  EXPECT_EQ(p.engine.kv_cache.num_blocks, (4096 + 15) / 16 * 4 + 1);
  EXPECT_EQ(p.runner->kv_config().num_blocks, p.engine.kv_cache.num_blocks);
  EXPECT_EQ(p.describe(a), "Qwen3_5ForCausalLM, hybrid");
}

TEST(EngineBuilder, RefusesAMaxModelLenPastTheModelUnlessAllowed) {
  EngineArgs a;
  a.dir = kModel;
  a.max_num_seqs = 1;
  a.quiet = true;
  a.max_model_len = 8192;
  const std::string e = error_of(a);
  EXPECT_NE(e.find("--max-model-len 8192 exceeds the model's max_position_embeddings 4096"),
            std::string::npos)
      << e;
  a.allow_long_max_model_len = true;
  EXPECT_EQ(error_of(a), "");
}

TEST(EngineBuilder, RefusesACpuCacheLargerThanAvailableMemoryBeforeAllocating) {
  ASSERT_GT(host_memory_available(), 0u);
  EngineArgs a;
  a.dir = kModel;
  a.quiet = true;
  a.allow_long_max_model_len = true;
  a.max_num_seqs = 16;
  // 16 requests of 2^31 tokens: terabytes of KV, far past any machine's memory.
  a.max_model_len = int64_t(1) << 31;
  const std::string e = error_of(a);
  EXPECT_NE(e.find("exceed 90% of the"), std::string::npos) << e;
  EXPECT_NE(e.find("--max-model-len"), std::string::npos) << e;
}

TEST(EngineBuilder, ValidatesEveryFlagByName) {
  EngineArgs a;
  a.dir = kModel;
  a.max_num_seqs = 0;
  EXPECT_NE(error_of(a).find("--max-num-seqs 0"), std::string::npos);
  a.max_num_seqs = 1;
  a.gpu_memory_utilization = 1.5;
  EXPECT_NE(error_of(a).find("--gpu-memory-utilization 1.5"), std::string::npos);
  a.gpu_memory_utilization = 0.9;
  a.num_gpu_blocks_override = 0;
  EXPECT_NE(error_of(a).find("--num-gpu-blocks-override 0"), std::string::npos);
  a.num_gpu_blocks_override.reset();
  a.dir = "/nonexistent-model-dir";
  EXPECT_NE(error_of(a).find("/nonexistent-model-dir/config.json"), std::string::npos);
}

TEST(EngineBuilder, LanguageModelOnlyBuildsNoVisionTower) {
  EngineArgs a;
  a.dir = std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/qwen3_5-tiny-vl";
  a.max_num_seqs = 2;
  a.quiet = true;
  EngineParts with = build_engine(a);
  EXPECT_TRUE(with.vision);
  // vision_tower() is the model's non-const accessor; the test only reads it.
  auto tower = [](EngineParts& p) {
    return const_cast<models::Model&>(p.runner->model()).vision_tower();
  };
  EXPECT_NE(tower(with), nullptr);
  a.language_model_only = true;
  EngineParts without = build_engine(a);
  EXPECT_FALSE(without.vision);
  EXPECT_EQ(tower(without), nullptr);
  EXPECT_NE(without.describe(a).find("language model only"), std::string::npos)
      << without.describe(a);
}

TEST(EngineBuilder, GenerationConfigSelectsTheSamplingDefaults) {
  EngineArgs a;
  a.dir = kModel;
  // auto: the model's own generation_config.json (temperature 0.6, top_k 20, top_p 0.95).
  io::GenerationConfig g = sampling_generation_config(a);
  EXPECT_DOUBLE_EQ(g.temperature.value_or(-1), 0.6);
  EXPECT_EQ(g.top_k.value_or(-1), 20);
  EXPECT_DOUBLE_EQ(g.top_p.value_or(-1), 0.95);
  // The override lays its fields over the file's.
  a.override_generation_config = R"({"temperature": 0.25, "max_new_tokens": 7})";
  g = sampling_generation_config(a);
  EXPECT_DOUBLE_EQ(g.temperature.value_or(-1), 0.25);
  EXPECT_EQ(g.top_k.value_or(-1), 20);
  EXPECT_EQ(g.max_new_tokens.value_or(-1), 7);
  // vllm: no file, only the override.
  a.generation_config = "vllm";
  g = sampling_generation_config(a);
  EXPECT_FALSE(g.top_k.has_value());
  EXPECT_DOUBLE_EQ(g.temperature.value_or(-1), 0.25);
  // Another folder; a folder without the file and a bad override are named errors.
  a.override_generation_config.clear();
  a.generation_config = kModel;
  EXPECT_EQ(sampling_generation_config(a).top_k.value_or(-1), 20);
  a.generation_config = std::string(VTLLM_SOURCE_DIR) + "/docs";
  try {
    sampling_generation_config(a);
    ADD_FAILURE() << "a folder without generation_config.json was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no generation_config.json"), std::string::npos);
  }
  a.generation_config = "auto";
  a.override_generation_config = R"({"temperature": "hot"})";
  try {
    sampling_generation_config(a);
    ADD_FAILURE() << "a bad override was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--override-generation-config"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vtllm::engine
