// The VL oracle fixtures (tools/oracle/vl_fixtures.py: tests/fixtures/qwen3_5-tiny-vl, the
// MoE tests/fixtures/qwen3_5_moe-tiny-vl-mm, any directory with a vl_reference.json;
// ../models/vl_fixture_dirs.h) through the whole CPU path a served chat takes: the fixture's own
// image files through process_media with the checkpoint's processor config, the rendered chat text
// through the tokenizer, expand_prompt and make_multimodal_prompt, then LlmEngine over ModelRunner
// (the encoder budget, the encoder cache, MRoPE step plans). The expanded ids, the 3-D positions
// and δ, and all 32 greedy tokens must equal the oracle's. Video cases are left out: the fixture's
// videos are frame stacks, not files. A fixture skips until it exists.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "../models/vl_fixture_dirs.h"
#include "base/file.h"
#include "engine/llm_engine.h"
#include "engine/model_runner.h"
#include "models/registry.h"
#include "multimodal/media_processor.h"
#include "multimodal/prompt_expansion.h"
#include "text/tokenizer.h"

namespace vtllm::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The file of media item `name` in fixture directory `dir` (its image, not a .npy stack).
std::vector<uint8_t> media_file(const std::string& dir, const std::string& name) {
  for (const auto& e : fs::directory_iterator(dir + "/media"))
    if (e.path().stem() == name && e.path().extension() != ".npy") {
      const std::string s = read_file(e.path().string());
      return {s.begin(), s.end()};
    }
  ADD_FAILURE() << "no media file for " << name;
  return {};
}

// One VL fixture directory (repository-relative) per instance.
class VlFixtureEngine : public ::testing::TestWithParam<std::string> {};

TEST_P(VlFixtureEngine, ImageChatsFromTheirFilesMatchTheOracle) {
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/" + GetParam();
  if (!fs::exists(dir + "/vl_reference.json"))
    GTEST_SKIP() << GetParam() << " has no vl_reference.json yet (tools/oracle/vl_fixtures.py)";
  const json ref = json::parse(read_file(dir + "/vl_reference.json"));
  const text::Tokenizer tok = text::Tokenizer::from_dir(dir);
  const multimodal::ProcessorConfig pc = multimodal::load_processor_config(dir);
  const io::ModelConfig mc = models::load_model_config(dir);
  const multimodal::VisionTokenIds ids{int32_t(mc.image_token_id), int32_t(mc.video_token_id),
                                       int32_t(mc.vision_start_token_id),
                                       int32_t(mc.vision_end_token_id)};
  const int64_t merge = mc.vision->spatial_merge_size;
  const multimodal::EncodeText encode = [&tok](std::string_view t) {
    return tok.encode(t, /*add_special_tokens=*/false);
  };

  EngineConfig cfg;
  cfg.scheduler.max_num_batched_tokens = 48;  // chunks cut through the placeholder runs
  cfg.scheduler.max_num_seqs = 8;
  cfg.scheduler.max_model_len = 512;
  cfg.kv_cache.block_size = 16;
  cfg.kv_cache.num_blocks = 400;
  cfg.kv_cache.num_state_slots = 8;
  LlmEngine engine(cfg, ModelRunner::load(dir, cfg.kv_cache));
  SamplingParams sp;
  sp.temperature = 0.0f;
  sp.ignore_eos = true;

  std::map<std::string, std::vector<int32_t>> want, got;
  int cases = 0;
  for (const json& c : ref["cases"]) {
    if (!c["videos"].empty()) continue;
    const std::string name = c["name"].get<std::string>();
    std::vector<std::shared_ptr<const multimodal::VisionInput>> items;
    std::vector<const multimodal::VisionInput*> ptrs;
    for (size_t i = 0; i < c["images"].size(); ++i) {
      auto v = std::make_shared<multimodal::VisionInput>(multimodal::process_media(
          multimodal::MediaKind::kImage, media_file(dir, c["images"][i].get<std::string>()), pc));
      const auto g = c["image_grid_thw"][i].get<std::vector<int64_t>>();
      EXPECT_EQ((std::vector<int64_t>{v->grid_t, v->grid_h, v->grid_w}), g) << name;
      ptrs.push_back(v.get());
      items.push_back(std::move(v));
    }
    const std::vector<int32_t> rendered = encode(c["rendered_text"].get<std::string>());
    const multimodal::ExpandedPrompt e =
        multimodal::expand_prompt(rendered, ptrs, ids, merge, encode);
    ASSERT_EQ(e.ids, c["ids"].get<std::vector<int32_t>>()) << name << ": expanded ids";
    const std::shared_ptr<const MultimodalPrompt> mm =
        make_multimodal_prompt(e, items, ids.pads(), merge);
    std::vector<int64_t> pos;
    for (const json& row : c["positions"])
      for (const json& p : row) pos.push_back(p.get<int64_t>());
    EXPECT_EQ(mm->mrope_positions, pos) << name << ": positions";
    EXPECT_EQ(mm->mrope_delta, c["delta"].get<int64_t>()) << name;
    want[name] = c["continuation"].get<std::vector<int32_t>>();
    sp.max_tokens = int64_t(want[name].size());
    engine.add_request(name, e.ids, sp, 0, mm);
    ++cases;
  }
  ASSERT_GE(cases, 3);
  while (engine.has_unfinished())
    for (const EngineOutput& o : engine.step())
      got[o.request_id].insert(got[o.request_id].end(), o.new_token_ids.begin(),
                               o.new_token_ids.end());
  EXPECT_EQ(got, want);
  std::printf(
      "[vl engine] %s: %d image chats from their files: expanded ids, positions and %zu "
      "greedy tokens each equal the oracle's\n",
      GetParam().c_str(), cases, want.begin()->second.size());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, VlFixtureEngine,
                         ::testing::ValuesIn(models::testing::vl_fixture_dirs()),
                         [](const auto& info) {
                           return models::testing::vl_fixture_test_name(info.param);
                         });

}  // namespace
}  // namespace vtllm::engine
