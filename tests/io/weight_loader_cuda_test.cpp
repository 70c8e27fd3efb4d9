// CUDA placement of checkpoint and dummy weights; skipped on machines without a GPU.
#include <gtest/gtest.h>

#include "config_classes.h"
#include "reference_params.h"

#include "io/dummy_weights.h"
#include "io/weight_loader.h"
#include "vt/ops/copy.h"

namespace vtllm::io {
namespace {

std::string bytes_of(const vt::Tensor& t) { return std::string(static_cast<const char*>(t.data_ptr()), t.nbytes()); }

TEST(WeightLoaderCuda, UploadsFixtureStraightFromTheMapping) {
  if (vt::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/qwen3_5-tiny-r3-vl";
  const ModelConfig c = testing::load_config(dir);
  vt::Stream cpu(vt::Device::cpu(), 2), gpu(vt::Device::cuda(0));
  Weights on_cpu = load_model_weights(cpu, dir, c, testing::reference_params(c), {.progress = LoadOptions::Progress::kNever});
  Weights on_gpu =
      load_model_weights(gpu, dir, c, testing::reference_params(c), {.device = vt::Device::cuda(0), .progress = LoadOptions::Progress::kNever});
  ASSERT_EQ(on_gpu.tensors.size(), on_cpu.tensors.size());
  EXPECT_EQ(on_gpu.summary.zero_copy, 0);
  for (const auto& [name, t] : on_gpu.tensors) {
    ASSERT_TRUE(t.device().is_cuda()) << name;
    EXPECT_EQ(bytes_of(vt::to_device(gpu, t, vt::Device::cpu())), bytes_of(on_cpu.at(name))) << name;
  }
}

// num_key_value_heads is given: absent, Qwen3Config's class default (32) applies, as
// io follows transformers, and 32 kv heads do not divide 2 query heads.
TEST(WeightLoaderCuda, DummyWeightsMatchTheCpuOnes) {
  if (vt::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const ModelConfig c = testing::parse_config(
      R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 300, "hidden_size": 32,
      "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 16,
      "num_key_value_heads": 1, "dtype": "bfloat16"})");
  const auto specs = testing::reference_params(c);
  vt::Stream cpu(vt::Device::cpu(), 2), gpu(vt::Device::cuda(0));
  Weights a = dummy_weights(cpu, specs, {.dummy_seed = 9, .progress = LoadOptions::Progress::kNever});
  Weights b = dummy_weights(gpu, specs,
                            {.device = vt::Device::cuda(0), .dummy_seed = 9, .progress = LoadOptions::Progress::kNever});
  for (const ParamSpec& s : specs)
    EXPECT_EQ(bytes_of(vt::to_device(gpu, b.at(s.name), vt::Device::cpu())), bytes_of(a.at(s.name))) << s.name;
}

}  // namespace
}  // namespace vtllm::io
