// Both expert layouts transformers reads (qwen3_5.md §3.1) load into the same MoE model:
// the fused fixture (mlp.experts.gate_up_proj [E, 2I, H], down_proj [E, H, I]) is
// rewritten here, byte for byte, as per-expert gate/up/down tensors in a temporary
// directory; the loader must assemble the same parameters (equal bytes) and the model
// give bit-identical logits. Skips until the MoE fixtures are generated.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "../io/st_writer.h"
#include "base/file.h"
#include "io/checkpoint.h"
#include "model_harness.h"
#include "models/registry.h"

namespace vtllm::models {
namespace {

namespace fs = std::filesystem;
using io::testing::StTensor;

const std::string kSource = std::string(VTLLM_SOURCE_DIR);

// The checkpoint in `dir` with every fused expert tensor split per expert.
std::vector<StTensor> per_expert_tensors(const std::string& dir, int64_t* split) {
  const io::Checkpoint ck = io::Checkpoint::open(dir);
  std::vector<StTensor> out;
  *split = 0;
  for (const auto& [name, e] : ck.tensors()) {
    const io::SafetensorsTensor& t = *e.tensor;
    const std::string bytes(reinterpret_cast<const char*>(e.file->data(t)), t.end - t.begin);
    const bool gate_up = name.ends_with(".mlp.experts.gate_up_proj");
    const bool down = name.ends_with(".mlp.experts.down_proj");
    if (!gate_up && !down) {
      out.push_back({name, t.st_dtype, t.shape, bytes});
      continue;
    }
    ++*split;
    const std::string prefix = name.substr(0, name.rfind('.') + 1);  // "...mlp.experts."
    const int64_t E = t.shape[0], rows = t.shape[1], cols = t.shape[2];
    const size_t row_bytes = size_t(cols) * t.itemsize, expert_bytes = size_t(rows) * row_bytes;
    for (int64_t x = 0; x < E; ++x) {
      const std::string ex = bytes.substr(size_t(x) * expert_bytes, expert_bytes);
      const std::string p = prefix + std::to_string(x) + ".";
      if (gate_up) {
        const size_t half = expert_bytes / 2;
        out.push_back({p + "gate_proj.weight", t.st_dtype, {rows / 2, cols}, ex.substr(0, half)});
        out.push_back({p + "up_proj.weight", t.st_dtype, {rows / 2, cols}, ex.substr(half)});
      } else {
        out.push_back({p + "down_proj.weight", t.st_dtype, {rows, cols}, ex});
      }
    }
  }
  return out;
}

void check_layouts(const std::string& rel_dir) {
  const std::string dir = kSource + "/" + rel_dir;
  if (!fs::exists(dir + "/model.safetensors"))
    GTEST_SKIP() << rel_dir << " is not generated yet (tools/oracle/README.md)";
  io::testing::TempDir tmp;
  int64_t split = 0;
  io::testing::write_file(tmp / "model.safetensors",
                          io::testing::safetensors_bytes(per_expert_tensors(dir, &split)));
  fs::copy_file(dir + "/config.json", tmp / "config.json");
  const io::ModelConfig config = load_model_config(dir);
  ASSERT_EQ(split, 2 * config.text.num_hidden_layers) << "every layer's two fused expert tensors";

  vt::Stream s(vt::Device::cpu(), 2);
  const std::vector<io::ParamSpec> specs = declare_params(config, true);
  io::LoadOptions opt;
  opt.language_model_only = true;
  opt.progress = io::LoadOptions::Progress::kNever;
  const io::Weights fused = io::load_model_weights(s, dir, config, specs, opt);
  const io::Weights pieces = io::load_model_weights(s, tmp.str(), config, specs, opt);
  EXPECT_EQ(fused.summary.fused, 0);
  EXPECT_EQ(pieces.summary.fused, split);
  for (const io::ParamSpec& p : specs) {
    const vt::Tensor& a = fused.at(p.name);
    const vt::Tensor& b = pieces.at(p.name);
    ASSERT_EQ(a.shape(), b.shape()) << p.name;
    ASSERT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0) << p.name;
  }

  auto m1 = load_model(dir, s, {}, ModelOptions{});
  auto m2 = load_model(tmp.str(), s, {}, ModelOptions{});
  testing::Harness h1(*m1, s), h2(*m2, s);
  testing::Sequence q1({5, 77, 201, 12, 9, 250, 3}), q2 = q1;
  EXPECT_EQ(h1.prefill(q1), h2.prefill(q2));
}

TEST(MoeCheckpoint, PerExpertLayoutLoadsTheSameTextModel) {
  check_layouts("tests/fixtures/qwen3_5_moe-tiny");
}
TEST(MoeCheckpoint, PerExpertLayoutLoadsTheSameVlTextModel) {
  check_layouts("tests/fixtures/qwen3_5_moe-tiny-vl");
}

}  // namespace
}  // namespace vtllm::models
