// Multimodal requests through LlmEngine: a fake vision tower and a fake model that reads
// every token's input (its embedding, or the features scattered into its row) and its
// three MRoPE positions back through the paged cache, so a feature in the wrong row, a
// wrong position, a wrong prefix-cache hit or a feature computed from the wrong item
// changes the tokens. The reference computes the features and positions straight from
// the request.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "base/error.h"
#include "base/hash.h"
#include "engine/llm_engine.h"
#include "engine/mm_embedder.h"
#include "engine/model_executor.h"

namespace vtllm::engine {
namespace {

constexpr int64_t kVocab = 64;
constexpr int kBlockSize = 4;
constexpr multimodal::VisionTokenIds kTok{60, 61, 58, 59};
constexpr int64_t kPatchDim = 4, kHidden = 3;

// Feature row j of an item: its 4 merged patches weighted by their order.
std::array<float, kHidden> feature_of(const float* px, int64_t j) {
  std::array<float, kHidden> f{};
  for (int64_t c = 0; c < kHidden; ++c) {
    float acc = 0.5f * float(c);
    for (int64_t k = 0; k < 4; ++k) acc += px[(4 * j + k) * kPatchDim + c] * float(k + 1);
    f[size_t(c)] = acc;
  }
  return f;
}

class FakeTower : public models::VisionTower {
 public:
  int64_t patch_dim() const override { return kPatchDim; }
  int64_t merge_size() const override { return 2; }
  int64_t out_hidden() const override { return kHidden; }
  vt::Tensor encode(vt::Stream&, const vt::Tensor& px,
                    const std::vector<models::VisionGrid>& grids) override {
    int64_t n = 0;
    for (const auto& g : grids) n += g.t * g.h * g.w;
    VT_CHECK(px.dim() == 2 && px.size(0) == n && px.size(1) == kPatchDim, "fake tower: ", px.str());
    vt::Tensor out = vt::Tensor::empty({n / 4, kHidden}, vt::DType::kF32, vt::Device::cpu());
    for (int64_t j = 0; j < n / 4; ++j) {
      const auto f = feature_of(px.data<float>(), j);
      std::memcpy(out.data<float>() + j * kHidden, f.data(), sizeof f);
    }
    items += int64_t(grids.size());
    return out;
  }
  int64_t items = 0;
};

uint64_t mix_entry(uint64_t h, uint64_t input, int64_t t, int64_t hh, int64_t w) {
  h = splitmix64(h * 31 + input);
  return splitmix64(h ^ uint64_t(t * 1000003 + hh * 1009 + w));
}
uint64_t feature_key(const std::array<float, kHidden>& f) {
  uint64_t k = 0x51ed;
  for (float x : f) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    k = splitmix64(k ^ b);
  }
  return k | (uint64_t{1} << 63);  // never equal to a token id
}
std::vector<float> logits_from_hash(uint64_t h) {
  std::vector<float> l(kVocab);
  for (int64_t i = 0; i < kVocab; ++i)
    l[size_t(i)] = float((mix64(h ^ mix64(uint64_t(i) + 1)) >> 11) * 0x1.0p-53 * 6.0 - 3.0);
  return l;
}

class FakeMmModel : public HostLogitsExecutor {
 public:
  FakeMmModel(int32_t num_blocks) : kv_(size_t(num_blocks) * kBlockSize), embedder_(tower_) {}
  int64_t vocab_size() const override { return kVocab; }
  int64_t check_multimodal() const override { return 2; }
  int64_t encoder_bytes_per_token() const override { return kHidden * 4; }

  std::vector<float> logits(const StepPlan& p) override {
    // The scheduler's promise: every row's item is cached or encoded in this step.
    for (const EmbedSlice& e : p.embeds) {
      bool scheduled = false;
      for (const auto& v : p.encoder_inputs)
        scheduled = scheduled || v.get() == e.input.get() || v->hash == e.input->hash;
      bool freed = false;
      for (const BlockHash& h : p.encoder_frees) freed = freed || h == e.hash();
      if (!scheduled && (freed || !embedder_.cached(e.hash()))) ++unscheduled_reads;
    }
    const models::InputEmbeddings emb = embedder_.embed(stream_, p);
    std::map<int32_t, std::array<float, kHidden>> rows;
    for (size_t i = 0; i < emb.rows.size(); ++i) {
      std::array<float, kHidden> f;
      std::memcpy(f.data(), emb.values.data<float>() + i * kHidden, sizeof f);
      rows[emb.rows[i]] = f;
    }
    const int64_t T = p.num_tokens();
    for (int64_t b = 0; b < p.num_requests(); ++b)
      for (int32_t t = p.query_start_loc[b]; t < p.query_start_loc[b + 1]; ++t) {
        Entry e;
        e.index = p.context_lens[b] + (t - p.query_start_loc[b]);
        auto it = rows.find(t);
        e.input = it != rows.end() ? feature_key(it->second) : uint64_t(p.token_ids[t]);
        for (int r = 0; r < 3; ++r)
          e.pos[r] = p.positions[size_t(p.position_rows == 3 ? r * T + t : t)];
        kv_.at(size_t(p.slot_mapping[t])) = e;
      }
    tokens_computed += T;
    if (p.position_rows == 3) ++mrope_steps;
    std::vector<float> out;
    for (size_t k = 0; k < p.logits_indices.size(); ++k) {
      const int32_t b = p.logits_requests[k];
      uint64_t h = 0x1234567;
      for (int64_t pos = 0; pos < p.seq_lens[b]; ++pos) {
        const int32_t block = p.block_table[b * p.max_blocks_per_seq + pos / kBlockSize];
        const Entry& e = kv_.at(size_t(block) * kBlockSize + pos % kBlockSize);
        VT_CHECK(e.index == pos, "fake model: position ", pos, " reads a slot of ", e.index);
        h = mix_entry(h, e.input, e.pos[0], e.pos[1], e.pos[2]);
      }
      const auto l = logits_from_hash(h);
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  }

  FakeTower tower_;
  int64_t tokens_computed = 0, mrope_steps = 0, unscheduled_reads = 0;

 private:
  struct Entry {
    int64_t index = -1;
    uint64_t input = 0;
    int64_t pos[3] = {0, 0, 0};
  };
  std::vector<Entry> kv_;
  MmEmbedder embedder_;
  vt::Stream stream_{vt::Device::cpu()};
};

std::shared_ptr<const multimodal::VisionInput> make_item(multimodal::MediaKind kind, int64_t t,
                                                         int64_t h, int64_t w, uint64_t seed) {
  auto v = std::make_shared<multimodal::VisionInput>();
  v->kind = kind;
  v->grid_t = t, v->grid_h = h, v->grid_w = w;
  v->patch_dim = kPatchDim;
  std::mt19937 rng{uint32_t(seed)};
  std::uniform_real_distribution<float> u(-1, 1);
  v->pixel_values.resize(size_t(v->num_patches() * kPatchDim));
  for (float& x : v->pixel_values) x = u(rng);
  if (kind == multimodal::MediaKind::kVideo)
    for (int64_t i = 0; i < t; ++i) v->timestamps.push_back(0.5 + 1.25 * double(i));
  const BlockHash hh =
      hash_bytes(std::string_view(reinterpret_cast<const char*>(v->pixel_values.data()),
                                  v->pixel_values.size() * sizeof(float)));
  v->hash = {hh.hi ^ uint64_t(kind == multimodal::MediaKind::kVideo),
             hh.lo ^ uint64_t(t * 4096 + h * 64 + w)};
  return v;
}

struct MmSpec {
  std::string id;
  std::vector<int32_t> prompt;  // expanded
  std::shared_ptr<const MultimodalPrompt> mm;
  int64_t max_tokens = 6;
};

// Text ids below the specials; the template's own vs/ve around each pad.
MmSpec make_spec(const std::string& id, const std::vector<int32_t>& text_before,
                 const std::vector<std::shared_ptr<const multimodal::VisionInput>>& items,
                 const std::vector<int32_t>& text_after) {
  std::vector<int32_t> ids = text_before;
  std::vector<const multimodal::VisionInput*> raw;
  for (const auto& v : items) {
    ids.push_back(kTok.vision_start);
    ids.push_back(v->kind == multimodal::MediaKind::kImage ? kTok.image_pad : kTok.video_pad);
    ids.push_back(kTok.vision_end);
    ids.push_back(int32_t(3 + raw.size()));  // text between items
    raw.push_back(v.get());
  }
  ids.insert(ids.end(), text_after.begin(), text_after.end());
  const auto encode = [](std::string_view s) {
    std::vector<int32_t> out;
    for (char c : s) out.push_back(int32_t(uint8_t(c)) % 50);
    return out;
  };
  const multimodal::ExpandedPrompt e = multimodal::expand_prompt(ids, raw, kTok, 2, encode);
  MmSpec s;
  s.id = id;
  s.prompt = e.ids;
  if (!items.empty()) s.mm = make_multimodal_prompt(e, items, kTok.pads(), 2);
  return s;
}

// Greedy tokens computed from the request alone: features from the items' pixels,
// positions from the MultimodalPrompt, decode positions index + δ.
std::vector<int32_t> reference(const MmSpec& s) {
  const int64_t P = int64_t(s.prompt.size());
  std::vector<uint64_t> input(s.prompt.begin(), s.prompt.end());
  if (s.mm)
    for (const MultimodalItem& it : s.mm->items) {
      int64_t j = 0;
      for (const auto& run : it.placement.runs)
        for (int64_t r = run.start; r < run.start + run.length; ++r, ++j)
          input[size_t(r)] = feature_key(feature_of(it.input->pixel_values.data(), j));
    }
  std::vector<int32_t> out;
  uint64_t h = 0x1234567;
  for (int64_t i = 0; i < P + s.max_tokens - 1; ++i) {
    int64_t pos[3];
    for (int r = 0; r < 3; ++r)
      pos[r] = !s.mm ? i : i < P ? s.mm->mrope_positions[size_t(r * P + i)] : i + s.mm->mrope_delta;
    h = mix_entry(h, i < P ? input[size_t(i)] : uint64_t(out[size_t(i - P)]), pos[0], pos[1],
                  pos[2]);
    if (i >= P - 1) {
      const auto l = logits_from_hash(h);
      out.push_back(int32_t(std::max_element(l.begin(), l.end()) - l.begin()));
    }
  }
  return out;
}

EngineConfig config(int32_t blocks, int64_t budget, int64_t encoder_budget = 0,
                    int64_t encoder_bytes = int64_t{1} << 20, int64_t max_model_len = 160) {
  EngineConfig c;
  c.scheduler.max_num_batched_tokens = budget;
  c.scheduler.max_num_seqs = 16;
  c.scheduler.max_model_len = max_model_len;
  c.scheduler.max_num_encoder_input_tokens = encoder_budget;
  c.scheduler.encoder_cache_bytes = encoder_bytes;
  c.scheduler.encoder_bytes_per_token = kHidden * 4;
  c.kv_cache.block_size = kBlockSize;
  c.kv_cache.num_blocks = blocks;
  c.sampler.seed = 1;
  return c;
}

struct RunResult {
  std::map<std::string, std::vector<int32_t>> tokens;
  std::map<std::string, int64_t> cached;
};

RunResult run_all(LlmEngine& engine, const std::vector<MmSpec>& specs, bool together = true) {
  RunResult res;
  SamplingParams p;
  p.temperature = 0;
  auto drain = [&] {
    while (engine.has_unfinished())
      for (const EngineOutput& o : engine.step()) {
        auto& t = res.tokens[o.request_id];
        t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
        if (o.finished) res.cached[o.request_id] = o.num_cached_tokens;
      }
  };
  for (const MmSpec& s : specs) {
    p.max_tokens = s.max_tokens;
    engine.add_request(s.id, s.prompt, p, 0, s.mm);
    if (!together) drain();
  }
  drain();
  return res;
}

using multimodal::MediaKind;

std::vector<MmSpec> mixed_specs() {
  auto a = make_item(MediaKind::kImage, 1, 4, 6, 1);  // 6 tokens
  auto b = make_item(MediaKind::kImage, 1, 2, 2, 2);  // 1 token
  auto v = make_item(MediaKind::kVideo, 3, 4, 4, 3);  // 3 x 4 tokens
  auto c = make_item(MediaKind::kImage, 1, 8, 4, 4);  // 8 tokens
  return {make_spec("img", {1, 2, 3}, {a}, {7, 8}),
          make_spec("text", {1, 2, 3, 4, 5, 6, 7, 8, 9}, {}, {}),
          make_spec("video", {9, 9}, {v, b}, {5}), make_spec("two", {4}, {c, a}, {6, 6, 6}),
          make_spec("img-again", {1, 2, 3}, {a}, {7, 8})};
}

TEST(MmEngine, GreedyTokensMatchTheReferenceInOneBatch) {
  auto model = std::make_unique<FakeMmModel>(200);
  FakeMmModel* m = model.get();
  LlmEngine engine(config(200, 512), std::move(model));
  const auto specs = mixed_specs();
  const RunResult r = run_all(engine, specs);
  for (const MmSpec& s : specs) EXPECT_EQ(r.tokens.at(s.id), reference(s)) << s.id;
  EXPECT_GT(m->mrope_steps, 0);
  EXPECT_EQ(m->unscheduled_reads, 0);
  EXPECT_EQ(m->tower_.items, 4);  // a, b, v, c: each once although a appears three times
}

// Chunks of 3 tokens split every placeholder run; a cache of 33 blocks (one sequence of
// 128 tokens) preempts.
TEST(MmEngine, ChunkedPrefillAndPreemptionKeepTheTokens) {
  for (int64_t budget : {3, 5, 8, 64}) {
    for (int32_t blocks : {200, 34}) {
      auto model = std::make_unique<FakeMmModel>(blocks);
      FakeMmModel* m = model.get();
      LlmEngine engine(config(blocks, budget, 0, int64_t{1} << 20, 128), std::move(model));
      auto specs = mixed_specs();
      for (MmSpec& s : specs) s.max_tokens = 30;
      const RunResult r = run_all(engine, specs);
      for (const MmSpec& s : specs)
        EXPECT_EQ(r.tokens.at(s.id), reference(s))
            << s.id << " budget " << budget << " blocks " << blocks;
      EXPECT_EQ(m->unscheduled_reads, 0);
      if (blocks == 34) {
        EXPECT_GT(engine.stats().num_preemptions, 0) << budget;
      } else {
        EXPECT_EQ(m->tower_.items, 4) << budget;  // each item once, however it is chunked
      }
    }
  }
}

TEST(MmEngine, ARepeatedImageIsEncodedOnceAcrossRequests) {
  auto model = std::make_unique<FakeMmModel>(200);
  FakeMmModel* m = model.get();
  LlmEngine engine(config(200, 512), std::move(model));
  auto a = make_item(MediaKind::kImage, 1, 4, 4, 11);
  auto a_copy = make_item(MediaKind::kImage, 1, 4, 4, 11);  // equal content, other object
  std::vector<MmSpec> specs = {make_spec("t1", {1, 2}, {a}, {3}),
                               make_spec("t2", {1, 2, 3, 4, 5, 6, 7}, {a_copy}, {9, 9}),
                               make_spec("t3", {8}, {a, a}, {2})};
  const RunResult r = run_all(engine, specs, /*together=*/false);
  for (const MmSpec& s : specs) EXPECT_EQ(r.tokens.at(s.id), reference(s)) << s.id;
  EXPECT_EQ(m->tower_.items, 1);
  const EncoderCacheStats st = engine.encoder_cache_stats();
  EXPECT_EQ(st.num_encoded, 1);
  EXPECT_GE(st.num_hits, 2);
}

TEST(MmEngine, ASmallEncoderCacheEvictsAndReencodes) {
  // Room for one 4-token item: alternating images evict each other.
  auto model = std::make_unique<FakeMmModel>(200);
  FakeMmModel* m = model.get();
  LlmEngine engine(config(200, 512, 0, 4 * kHidden * 4), std::move(model));
  auto a = make_item(MediaKind::kImage, 1, 4, 4, 21), b = make_item(MediaKind::kImage, 1, 4, 4, 22);
  std::vector<MmSpec> specs = {make_spec("a1", {1}, {a}, {2}), make_spec("b1", {1}, {b}, {2}),
                               make_spec("a2", {3}, {a}, {2}), make_spec("ab", {4}, {a, b}, {5})};
  const RunResult r = run_all(engine, specs, /*together=*/false);
  for (const MmSpec& s : specs) EXPECT_EQ(r.tokens.at(s.id), reference(s)) << s.id;
  EXPECT_EQ(m->unscheduled_reads, 0);
  // a, b, a, then "ab": a is cached from a2, b is encoded after a is released.
  EXPECT_EQ(m->tower_.items, 4);
  EXPECT_LE(engine.encoder_cache_stats().bytes, 4 * kHidden * 4);
}

TEST(MmEngine, TheEncoderBudgetEndsAChunkBeforeAnUncachedItem) {
  auto model = std::make_unique<FakeMmModel>(200);
  FakeMmModel* m = model.get();
  LlmEngine engine(config(200, 512, /*encoder_budget=*/4), std::move(model));
  auto a = make_item(MediaKind::kImage, 1, 4, 4, 31), b = make_item(MediaKind::kImage, 1, 4, 4, 32);
  const MmSpec s = make_spec("ab", {1, 2}, {a, b}, {3});
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = s.max_tokens;
  engine.add_request(s.id, s.prompt, p, 0, s.mm);
  std::vector<int32_t> tokens;
  engine.step();
  // The first step stops at b's first placeholder row: its 4 tokens would exceed the budget.
  const int64_t b_first = s.mm->items[1].placement.runs[0].start;
  EXPECT_EQ(m->tokens_computed, b_first);
  EXPECT_EQ(m->tower_.items, 1);
  while (engine.has_unfinished())
    for (const EngineOutput& o : engine.step())
      tokens.insert(tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
  EXPECT_EQ(tokens, reference(s));
  EXPECT_EQ(m->tower_.items, 2);
}

TEST(MmEngine, SameTextWithAnotherImageSharesNoBlocks) {
  auto model = std::make_unique<FakeMmModel>(200);
  LlmEngine engine(config(200, 512), std::move(model));
  auto x = make_item(MediaKind::kImage, 1, 4, 8, 41), y = make_item(MediaKind::kImage, 1, 4, 8, 42);
  const std::vector<int32_t> pre = {1, 2, 3, 4, 5, 6, 7, 8};  // two full blocks before the image
  std::vector<MmSpec> specs = {make_spec("x", pre, {x}, {9, 9, 9, 9, 9, 9}),
                               make_spec("y", pre, {y}, {9, 9, 9, 9, 9, 9}),
                               make_spec("x-again", pre, {x}, {9, 9, 9, 9, 9, 9})};
  ASSERT_EQ(specs[0].prompt, specs[1].prompt);  // the same ids: only the image differs
  const RunResult r = run_all(engine, specs, /*together=*/false);
  for (const MmSpec& s : specs) EXPECT_EQ(r.tokens.at(s.id), reference(s)) << s.id;
  EXPECT_EQ(r.tokens.at("x"), r.tokens.at("x-again"));
  EXPECT_NE(r.tokens.at("x"), r.tokens.at("y"));
  // y reuses the text blocks before the image only; x-again all full blocks but the last token's.
  EXPECT_EQ(r.cached.at("y"), 8);
  const int64_t P = int64_t(specs[2].prompt.size());
  EXPECT_EQ(r.cached.at("x-again"), (P - 1) / kBlockSize * kBlockSize);
}

TEST(MmEngine, RefusedWithoutAVisionEncoder) {
  class TextOnly : public HostLogitsExecutor {
   public:
    int64_t vocab_size() const override { return kVocab; }
    std::vector<float> logits(const StepPlan&) override { return {}; }
  };
  LlmEngine engine(config(200, 512), std::make_unique<TextOnly>());
  const MmSpec s = make_spec("r", {1}, {make_item(MediaKind::kImage, 1, 2, 2, 5)}, {2});
  try {
    engine.add_request(s.id, s.prompt, SamplingParams{}, 0, s.mm);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no vision encoder"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(engine.has_unfinished());
}

TEST(MmEngine, APromptThatDoesNotFitItsItemsIsRefused) {
  LlmEngine engine(config(200, 512), std::make_unique<FakeMmModel>(200));
  MmSpec s = make_spec("bad", {1}, {make_item(MediaKind::kImage, 1, 2, 2, 5)}, {2});
  s.prompt.pop_back();  // the positions no longer cover the prompt
  EXPECT_THROW(engine.add_request(s.id, s.prompt, SamplingParams{}, 0, s.mm), Error);
}

}  // namespace
}  // namespace vtllm::engine
