// The multimodal oracle fixtures (tools/oracle/vl_fixtures.py: transformers'
// Qwen3VLProcessor, Qwen3.5 chat template, f32 Qwen3_5ForConditionalGeneration in
// tests/fixtures/qwen3_5-tiny-vl and Qwen3_5MoeForConditionalGeneration in
// tests/fixtures/qwen3_5_moe-tiny-vl-mm; every fixture directory with a vl_reference.json,
// vl_fixture_dirs.h) reproduced STRICTLY by the CPU model:
//   - the vision tower's features from the stored pixel_values equal the oracle's;
//   - the 32 greedy tokens of every conversation equal the oracle's, with the oracle's
//     features scattered into the placeholder rows and its 3-D positions ([3, T], then
//     T + k + delta on all rows while decoding), every reported logit within 1e-4 of
//     the oracle's relative to the step's largest |top logit|; and again end to end
//     with the tower's own features where the fixture stores every item's pixels;
//   - zero features change most of the tokens (the fixture is sensitive to the image).
// and the bf16 gate: the same end to end in bf16 (on the CPU's bf16 path, and on CUDA when
// there is a device) against vl_reference_bf16.json outside the tie band.
// Each fixture skips, saying so, until it exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/file.h"
#include "io/safetensors.h"
#include "models/cache.h"
#include "models/registry.h"
#include "tie_band.h"
#include "vl_fixture_dirs.h"
#include "vt/device.h"
#include "vt/ops/copy.h"

namespace vtllm::models {
namespace {

using nlohmann::json;

constexpr double kRelTol = 1e-4;

std::string source_path(const std::string& rel) {
  return std::string(VTLLM_SOURCE_DIR) + "/" + rel;
}

struct Fixture {
  json ref;
  std::optional<io::SafetensorsFile> tensors;
  std::unique_ptr<Model> model;
  vt::Stream s;

  // The model of the fixture in `dir` (absolute) on `device` in `dtype` (unset: the
  // device's default).
  explicit Fixture(const std::string& dir, vt::Device device = vt::Device::cpu(),
                   std::optional<vt::DType> dtype = {})
      : ref(json::parse(read_file(dir + "/vl_reference.json"))),
        tensors(io::SafetensorsFile::open(dir + "/vl_tensors.safetensors")),
        s(device) {
    LoadConfig load;
    load.device = device;
    load.dtype = dtype;
    model = load_model(dir, s, load, ModelOptions{});
  }
  // Another model and reference, no tensors (the driver's own check).
  Fixture(std::unique_ptr<Model> m, json r) : ref(std::move(r)), model(std::move(m)) {}

  bool has(const std::string& name) const { return tensors && tensors->find(name) != nullptr; }

  // A stored tensor as f32 on the CPU; U8 pixel codes u become (u - 127.5) / 127.5.
  vt::Tensor get(const std::string& name) const {
    const io::SafetensorsTensor* t = tensors ? tensors->find(name) : nullptr;
    VT_CHECK(t != nullptr, "vl_tensors.safetensors has no tensor ", name);
    vt::Tensor out = vt::Tensor::empty(t->shape, vt::DType::kF32);
    const uint8_t* p = tensors->data(*t);
    if (t->st_dtype == "U8") {
      for (int64_t i = 0; i < out.numel(); ++i)
        out.data<float>()[i] = (float(p[i]) - 127.5f) / 127.5f;
    } else {
      VT_CHECK(t->st_dtype == "F32", name, ": dtype ", t->st_dtype);
      std::memcpy(out.data_ptr(), p, out.nbytes());
    }
    return out;
  }

  // The pixel rows of a stored item, and its grid.
  vt::Tensor pixels(const std::string& item) const {
    return has(item + ".pixel_codes") ? get(item + ".pixel_codes") : get(item + ".pixel_values");
  }
};

std::vector<VisionGrid> grids_of(const json& list) {
  std::vector<VisionGrid> g;
  for (const auto& x : list)
    g.push_back({x[0].get<int64_t>(), x[1].get<int64_t>(), x[2].get<int64_t>()});
  return g;
}

// max |got - want| / rms(want), both f32 CPU tensors of one size.
double rel_error(const vt::Tensor& want, const vt::Tensor& got_any) {
  vt::Stream cpu(vt::Device::cpu(), 1);
  const vt::Tensor got =
      vt::to_dtype(cpu, vt::to_device(cpu, got_any, vt::Device::cpu()), vt::DType::kF32);
  EXPECT_EQ(got.numel(), want.numel());
  double ss = 0, worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    ss += double(want.data<float>()[i]) * want.data<float>()[i];
  const double rms = std::sqrt(ss / double(std::max<int64_t>(want.numel(), 1)));
  for (int64_t i = 0; i < std::min(want.numel(), got.numel()); ++i) {
    const double g = got.data<float>()[i];
    worst = std::isfinite(g) ? std::max(worst, std::fabs(g - want.data<float>()[i])) : INFINITY;
  }
  return worst / rms;
}

// Features replacing the placeholder rows of `ids`, in order: image rows from `image`,
// video rows from `video` (either may be undefined when the prompt has none).
InputEmbeddings placeholder_embeds(const std::vector<int32_t>& ids, const json& tok,
                                   const vt::Tensor& image, const vt::Tensor& video) {
  const int32_t image_id = tok["image_token_id"].get<int32_t>();
  const int32_t video_id = tok["video_token_id"].get<int32_t>();
  InputEmbeddings e;
  int64_t ni = 0, nv = 0;
  std::vector<const float*> src;
  int64_t hidden = image.defined() ? image.size(1) : video.size(1);
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] == image_id) {
      VT_CHECK(image.defined() && ni < image.size(0), "more image placeholders than features");
      src.push_back(image.data<float>() + (ni++) * hidden);
    } else if (ids[t] == video_id) {
      VT_CHECK(video.defined() && nv < video.size(0), "more video placeholders than features");
      src.push_back(video.data<float>() + (nv++) * hidden);
    } else {
      continue;
    }
    e.rows.push_back(int32_t(t));
  }
  EXPECT_EQ(ni, image.defined() ? image.size(0) : 0) << "image features left over";
  EXPECT_EQ(nv, video.defined() ? video.size(0) : 0) << "video features left over";
  e.values = vt::Tensor::empty({int64_t(src.size()), hidden}, vt::DType::kF32);
  for (size_t i = 0; i < src.size(); ++i)
    std::copy(src[i], src[i] + hidden, e.values.data<float>() + int64_t(i) * hidden);
  return e;
}

// `e` with its values in the model's dtype on its device.
InputEmbeddings on_model(Fixture& f, InputEmbeddings e) {
  if (e.rows.empty()) return e;
  vt::Stream cpu(vt::Device::cpu(), 1);  // the dtype change on the host, then one upload
  e.values = vt::to_device(f.s, vt::to_dtype(cpu, e.values, f.model->dtype()), f.model->device());
  return e;
}

// One sequence on a paged cache, fed [3, T] positions: the prompt's from the fixture,
// then index + delta on every row.
class MropeRunner {
 public:
  MropeRunner(Model& model, vt::Stream& s)
      : model_(model),
        s_(s),
        cache_(s, model.cache_spec(), kBlocks, kBlockSize, 1, model.dtype()) {}

  std::vector<float> step(const std::vector<int32_t>& ids, const std::vector<int64_t>& pos3,
                          const InputEmbeddings* embeds) {
    const int64_t n = int64_t(ids.size()), ctx = computed_;
    ForwardBatch b;
    b.block_size = kBlockSize;
    b.token_ids = ids;
    b.query_start_loc = {0, int32_t(n)};
    b.seq_lens = {int32_t(ctx + n)};
    b.context_lens = {int32_t(ctx)};
    b.positions = pos3;
    b.position_rows = 3;
    b.max_blocks_per_seq = int32_t(kBlocks);
    for (int64_t i = 0; i < kBlocks; ++i) b.block_table.push_back(int32_t(kBlocks - 1 - i));
    for (int64_t t = ctx; t < ctx + n; ++t)
      b.slot_mapping.push_back(int64_t(b.block_table[size_t(t / kBlockSize)]) * kBlockSize +
                               t % kBlockSize);
    b.state_slots = {0};
    b.logits_indices = {int32_t(n - 1)};
    vt::Tensor hidden = model_.forward(s_, b, cache_, embeds);
    vt::Tensor logits =
        vt::to_device(s_, model_.compute_logits(s_, hidden, b.logits_indices), vt::Device::cpu());
    vt::Stream cpu(vt::Device::cpu(), 1);
    logits = vt::to_dtype(cpu, logits, vt::DType::kF32);
    computed_ += n;
    return std::vector<float>(logits.data<float>(), logits.data<float>() + logits.numel());
  }

 private:
  static constexpr int64_t kBlocks = 48, kBlockSize = 16;
  Model& model_;
  vt::Stream& s_;
  ModelCache cache_;
  int64_t computed_ = 0;
};

int32_t argmax(const std::vector<float>& v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

// Greedy decoding of case `c` with `embeds`; returns the tokens. `max_rel` (if set)
// takes the largest error of the oracle's reported logits, relative to the step's top
// one, over the steps whose context still equals the oracle's. With `check`, every
// token must equal the oracle's and every reported logit be within kRelTol.
std::vector<int32_t> greedy(Fixture& f, const json& c, const InputEmbeddings& embeds, bool check,
                            double* max_rel) {
  const auto ids = c["ids"].get<std::vector<int32_t>>();
  const int64_t T = int64_t(ids.size()), delta = c["delta"].get<int64_t>();
  std::vector<int64_t> pos3;
  for (int r = 0; r < 3; ++r) {
    const auto row = c["positions"][size_t(r)].get<std::vector<int64_t>>();
    EXPECT_EQ(int64_t(row.size()), T);
    pos3.insert(pos3.end(), row.begin(), row.end());
  }
  const auto cont = c["continuation"].get<std::vector<int32_t>>();
  const std::string what = "case '" + c["name"].get<std::string>() + "'";
  MropeRunner run(*f.model, f.s);
  std::vector<float> logits = run.step(ids, pos3, embeds.rows.empty() ? nullptr : &embeds);
  std::vector<int32_t> out;
  bool same_context = true;
  for (size_t step = 0; step < cont.size(); ++step) {
    if (max_rel && same_context) {
      double scale = 0;
      for (const auto& v : c["top_logits"][step])
        scale = std::max(scale, std::abs(v.get<double>()));
      for (size_t i = 0; i < c["top_ids"][step].size(); ++i) {
        const double d = std::abs(double(logits[c["top_ids"][step][i].get<size_t>()]) -
                                  c["top_logits"][step][i].get<double>()) /
                         scale;
        *max_rel = std::max(*max_rel, d);
        if (check) {
          EXPECT_LE(d, kRelTol) << what << " step " << step << " logit of id "
                                << c["top_ids"][step][i];
        }
      }
    }
    const int32_t tok = argmax(logits);
    out.push_back(tok);
    same_context = same_context && tok == cont[step];
    if (check && tok != cont[step]) {
      ADD_FAILURE() << what << " step " << step << ": token " << tok << ", the oracle's "
                    << cont[step] << " (oracle margin " << c["margins"][step] << ")";
      break;
    }
    if (step + 1 == cont.size()) break;
    const int64_t p = T + int64_t(step) + delta;
    logits = run.step({tok}, {p, p, p}, nullptr);
  }
  return out;
}

vt::Tensor features_or_empty(const Fixture& f, const std::string& name) {
  return f.has(name) ? f.get(name) : vt::Tensor();
}

TEST(VisionFixtureRunner, ReproducesTheTextOnlyVlFixture) {
  // The driver above on a text-only oracle (qwen3_5-tiny-r3-vl): [3, T] positions with
  // equal rows and delta 0 (qwen3_5.md §16.2) give the oracle's tokens.
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/qwen3_5-tiny-r3-vl";
  const json ref = json::parse(read_file(dir + "/reference.json"));
  vt::Stream s;
  auto model = load_model(dir, s, {}, ModelOptions{});
  ASSERT_NE(model->vision_tower(), nullptr) << "Qwen3_5ForConditionalGeneration has a tower";
  Fixture f{std::move(model), ref};
  double max_rel = 0;
  for (json p : ref["prompts"]) {
    const int64_t T = int64_t(p["ids"].size());
    json row = json::array();
    for (int64_t t = 0; t < T; ++t) row.push_back(t);
    p["positions"] = json::array({row, row, row});
    p["delta"] = 0;
    greedy(f, p, InputEmbeddings{}, true, &max_rel);
  }
  EXPECT_LE(max_rel, kRelTol);
}

// One VL fixture directory (repository-relative) per instance; skips while the fixture
// has no vl_reference.json.
class VisionFixture : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(dir() + "/vl_reference.json"))
      GTEST_SKIP() << GetParam() << " has no vl_reference.json yet "
                   << "(tools/oracle/vl_fixtures.py writes it on the GPU machine)";
  }
  std::string dir() const { return source_path(GetParam()); }
  // The fixture's name, for the printed figures.
  std::string name() const { return testing::vl_fixture_test_name(GetParam()); }
};

TEST_P(VisionFixture, TowerMatchesOracleFeaturesFromStoredPixels) {
  Fixture f(dir());
  VisionTower* tower = f.model->vision_tower();
  ASSERT_NE(tower, nullptr);
  int n = 0;
  for (const auto& [item, info] : f.ref["stored_items"].items()) {
    const vt::Tensor px = f.pixels(item);
    const std::vector<VisionGrid> grid = grids_of(json::array({info["grid_thw"]}));
    const vt::Tensor got = tower->encode(f.s, px, grid);
    const vt::Tensor want = f.get(item + ".features");
    ASSERT_EQ(got.size(0), want.size(0)) << item;
    const double err = rel_error(want, got);
    // f32 against f32: summation order only (the oracle's GEMMs and SDPA).
    EXPECT_LE(err, 1e-4) << item;
    std::printf("[vl fixture] %s: tower %s: %lld patches -> %lld features, max error %.3g x rms\n",
                name().c_str(), item.c_str(), (long long)px.size(0), (long long)got.size(0), err);
    ++n;
  }
  EXPECT_GE(n, 1) << "the fixture stores no item's pixels";
}

TEST_P(VisionFixture, GreedyMatchesOracleWithOracleFeatures) {
  Fixture f(dir());
  double max_rel = 0;
  int tokens = 0;
  for (const auto& c : f.ref["cases"]) {
    const std::string case_name = c["name"].get<std::string>();
    const InputEmbeddings e =
        placeholder_embeds(c["ids"].get<std::vector<int32_t>>(), f.ref["vision_token_ids"],
                           features_or_empty(f, case_name + ".image_features"),
                           features_or_empty(f, case_name + ".video_features"));
    tokens += int(greedy(f, c, e, true, &max_rel).size());
  }
  std::printf(
      "[vl fixture] %s: %d greedy tokens equal with the oracle's features, max logit error "
      "%.3g\n",
      name().c_str(), tokens, max_rel);
}

// Whether every image and video of case `c` has its pixels in the fixture.
bool all_items_stored(const Fixture& f, const json& c) {
  for (const auto& k : {"images", "videos"})
    for (const auto& item : c[k])
      if (!f.ref["stored_items"].contains(item.get<std::string>())) return false;
  return true;
}

// The tower's features of one modality of case `c` ("images" / "videos" with their grid
// key), its items packed in order through one encode call as the model does; f32 on the
// CPU, undefined when the case has none.
vt::Tensor tower_features(Fixture& f, const json& c, const char* items, const char* grids) {
  if (c[items].empty()) return vt::Tensor();
  VisionTower* tower = f.model->vision_tower();
  VT_CHECK(tower != nullptr, "the fixture's model has no vision tower");
  std::vector<vt::Tensor> px;
  int64_t rows = 0;
  for (const auto& item : c[items]) {
    px.push_back(f.pixels(item.get<std::string>()));
    rows += px.back().size(0);
  }
  vt::Tensor all_px = vt::Tensor::empty({rows, tower->patch_dim()}, vt::DType::kF32);
  int64_t off = 0;
  for (const vt::Tensor& p : px) {
    std::memcpy(all_px.data<float>() + off * tower->patch_dim(), p.data_ptr(), p.nbytes());
    off += p.size(0);
  }
  const vt::Tensor out = tower->encode(f.s, all_px, grids_of(c[grids]));
  vt::Stream cpu(vt::Device::cpu(), 1);
  return vt::to_dtype(cpu, vt::to_device(f.s, out, vt::Device::cpu()), vt::DType::kF32);
}

InputEmbeddings tower_embeds(Fixture& f, const json& c) {
  return on_model(
      f, placeholder_embeds(c["ids"].get<std::vector<int32_t>>(), f.ref["vision_token_ids"],
                            tower_features(f, c, "images", "image_grid_thw"),
                            tower_features(f, c, "videos", "video_grid_thw")));
}

TEST_P(VisionFixture, GreedyMatchesOracleEndToEnd) {
  Fixture f(dir());
  ASSERT_NE(f.model->vision_tower(), nullptr);
  double max_rel = 0;
  int cases = 0;
  for (const auto& c : f.ref["cases"]) {
    if (!all_items_stored(f, c)) continue;
    const InputEmbeddings e = tower_embeds(f, c);
    greedy(f, c, e, true, &max_rel);
    ++cases;
  }
  EXPECT_GE(cases, 1) << "no case has all its items' pixels stored";
  std::printf("[vl fixture] %s: %d cases end to end from pixels, max logit error %.3g\n",
              name().c_str(), cases, max_rel);
}

// A tower that returns zeros fails the strict gate on every case: its logits are off by
// far more than kRelTol while the context is still the oracle's. And on most tokens of at
// least one case per fixture (a tiny random model often repeats one token, so a case's
// tokens may hinge on a single decision; the oracle's inverted-pixels run is printed).
TEST_P(VisionFixture, ZeroFeaturesFailTheGate) {
  Fixture f(dir());
  int most_changed = 0;
  for (const auto& c : f.ref["cases"]) {
    const std::string case_name = c["name"].get<std::string>();
    vt::Tensor image = features_or_empty(f, case_name + ".image_features");
    vt::Tensor video = features_or_empty(f, case_name + ".video_features");
    for (vt::Tensor* t : {&image, &video})
      if (t->defined()) std::fill(t->data<float>(), t->data<float>() + t->numel(), 0.0f);
    const InputEmbeddings e = placeholder_embeds(c["ids"].get<std::vector<int32_t>>(),
                                                 f.ref["vision_token_ids"], image, video);
    double rel = 0;
    const std::vector<int32_t> got = greedy(f, c, e, false, &rel);
    const auto want = c["continuation"].get<std::vector<int32_t>>();
    int changed = 0;
    for (size_t i = 0; i < want.size(); ++i) changed += got[i] != want[i];
    most_changed = std::max(most_changed, changed);
    EXPECT_GE(rel, 100 * kRelTol) << case_name << ": zero features keep the oracle's logits";
    std::printf(
        "[vl fixture] %s: %s: zero features: logit error %.3g, %d of %zu tokens changed "
        "(inverted pixels in the oracle: %d)\n",
        name().c_str(), case_name.c_str(), rel, changed, want.size(),
        c["inverted"]["tokens_changed"].get<int>());
  }
  EXPECT_GE(most_changed, f.ref["steps"].get<int>() / 2) << "zero features keep the tokens of every case";
}

// ---- the bf16 gate (the CUDA backend's; its check runs on the CPU's bf16 path too)

using testing::bf16_ulp;
using testing::kTieBandUlps;

// Every case whose pixels are stored, end to end in bf16 on `device` (tower, then the
// language model with the fixture's positions), against the fixture's
// vl_reference_bf16.json (skips without one): every token equal except at an accepted
// divergence (tie_band.h), where the rest of the case is not compared (printed).
void run_bf16_gate(const std::string& dir, vt::Device device) {
  if (!std::filesystem::exists(dir + "/vl_reference_bf16.json"))
    GTEST_SKIP() << dir << " has no vl_reference_bf16.json (vl_fixtures.py --bf16 writes it)";
  Fixture f(dir, device, vt::DType::kBF16);
  ASSERT_EQ(f.model->dtype(), vt::DType::kBF16);
  const json bref = json::parse(read_file(dir + "/vl_reference_bf16.json"));
  int cases = 0, compared = 0, in_band = 0;
  for (const auto& c : f.ref["cases"]) {
    if (!all_items_stored(f, c)) continue;
    const std::string name = c["name"].get<std::string>();
    const json* b = nullptr;
    for (const auto& x : bref["cases"])
      if (x["name"] == name) b = &x;
    ASSERT_NE(b, nullptr) << name << " is not in vl_reference_bf16.json";
    ASSERT_EQ((*b)["ids"], c["ids"]) << name;
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    const int64_t T = int64_t(ids.size()), delta = c["delta"].get<int64_t>();
    std::vector<int64_t> pos3;
    for (int r = 0; r < 3; ++r)
      for (const auto& p : c["positions"][size_t(r)]) pos3.push_back(p.get<int64_t>());
    const InputEmbeddings e = tower_embeds(f, c);
    MropeRunner run(*f.model, f.s);
    std::vector<float> logits = run.step(ids, pos3, &e);
    const auto cont = (*b)["continuation"].get<std::vector<int32_t>>();
    for (size_t step = 0; step < cont.size(); ++step) {
      const double top = (*b)["top_logits"][step][0].get<double>();
      const double margin = (*b)["margins"][step].get<double>();
      const double band = kTieBandUlps * bf16_ulp(top);
      const int32_t tok = argmax(logits);
      ++compared;
      if (margin <= band) {
        ++in_band;
        std::printf(
            "[vl bf16] %s step %zu: oracle margin %.6g inside the tie band %.6g; vtllm "
            "%d, oracle %d%s\n",
            name.c_str(), step, margin, band, tok, cont[step],
            tok == cont[step] ? "" : ": diverged, rest of the case not compared");
        if (tok != cont[step]) break;
      }
      if (tok != cont[step]) {
        const auto& tids = (*b)["top_ids"][step];
        const auto& tvals = (*b)["top_logits"][step];
        double ours_oracle = NAN;  // the oracle's logit of our token, when recorded
        for (size_t i = 0; i < tids.size(); ++i)
          if (tids[i].get<int32_t>() == tok) ours_oracle = tvals[i].get<double>();
        const double err_oracle = std::abs(double(logits[size_t(cont[step])]) - top);
        const double err_ours = std::abs(double(logits[size_t(tok)]) - ours_oracle);
        if (testing::divergence_accepted(top, margin, err_oracle, err_ours)) {
          std::printf(
              "[vl bf16] %s step %zu: oracle margin %.6g within the two logits' measured "
              "error (%.3g + %.3g); vtllm %d, oracle %d: diverged, rest of the case not "
              "compared\n",
              name.c_str(), step, margin, err_oracle, err_ours, tok, cont[step]);
          break;
        }
        ADD_FAILURE() << name << " step " << step << ": vtllm " << tok << ", oracle " << cont[step]
                      << ", oracle margin " << margin << " > tie band " << band
                      << " and not within the two logits' error";
        break;
      }
      if (step + 1 == cont.size()) break;
      const int64_t p = T + int64_t(step) + delta;
      logits = run.step({tok}, {p, p, p}, nullptr);
    }
    ++cases;
  }
  EXPECT_GE(cases, 1);
  std::printf(
      "[vl bf16] %s on %s: %d cases end to end, %d steps compared, %d inside the tie band\n",
      dir.substr(dir.rfind('/') + 1).c_str(), device.str().c_str(), cases, compared, in_band);
}

TEST_P(VisionFixture, Bf16CpuEndToEndMatchesBf16OracleOutsideTieBand) {
  run_bf16_gate(dir(), vt::Device::cpu());
}

TEST_P(VisionFixture, Bf16CudaEndToEndMatchesBf16OracleOutsideTieBand) {
  if (vt::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  run_bf16_gate(dir(), vt::Device::cuda(0));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, VisionFixture, ::testing::ValuesIn(testing::vl_fixture_dirs()),
                         [](const auto& info) {
                           return testing::vl_fixture_test_name(info.param);
                         });

}  // namespace
}  // namespace vtllm::models
