// The model's own consistency, independent of the oracle: chunked prefill (chunks of
// 1, 7, 64 and the whole prompt), decode after prefill vs re-running the full
// sequence, batched vs alone, fused vs unfused attention preamble, MRoPE positions
// with equal rows vs 1-D positions. Logits agree to f32 rounding (relative 2e-5 of the
// largest |logit|: GEMM blocking and the chunked vs per-token GDN order differ).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "io/weight_names.h"
#include "model_harness.h"
#include "models/registry.h"
#include "vt/ops/embedding.h"

namespace vtllm::models {
namespace {

using testing::Harness;
using testing::Sequence;

constexpr double kTol = 2e-5;

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double mx = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    mx = std::max(mx, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return mx / scale;
}

std::vector<int32_t> random_prompt(int64_t n, int64_t vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& t : ids) t = int32_t(rng() % uint32_t(vocab));
  return ids;
}

std::string fixture(const char* name) { return std::string(VTLLM_SOURCE_DIR) + "/" + name; }

class ModelConsistency : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { model_ = load_model(fixture(GetParam()), s_, {}, ModelOptions{}); }
  std::vector<float> prefill_logits(const std::vector<int32_t>& ids, int64_t chunk) {
    Harness h(*model_, s_);
    Sequence seq(ids);
    return h.prefill(seq, chunk);
  }
  vt::Stream s_;
  std::unique_ptr<Model> model_;
};

TEST_P(ModelConsistency, ChunkedPrefillMatchesWholePrompt) {
  const auto ids = random_prompt(150, model_->vocab_size(), 7);
  const auto whole = prefill_logits(ids, 0);
  for (int64_t chunk : {1, 7, 64}) {
    const double d = rel_diff(prefill_logits(ids, chunk), whole);
    EXPECT_LE(d, kTol) << "chunk " << chunk;
    std::printf("[consistency] %s chunk %ld vs whole: %.3g\n", GetParam(), long(chunk), d);
  }
}

TEST_P(ModelConsistency, DecodeAfterPrefillMatchesFullRerun) {
  auto ids = random_prompt(70, model_->vocab_size(), 11);
  Harness h(*model_, s_);
  Sequence seq(ids);
  std::vector<float> logits = h.prefill(seq);
  for (int step = 0; step < 6; ++step) {
    seq.tokens.push_back(testing::argmax(logits));
    logits = h.step({{&seq, 1}})[0];
  }
  const double d = rel_diff(logits, prefill_logits(seq.tokens, 0));
  EXPECT_LE(d, kTol);
}

TEST_P(ModelConsistency, BatchedRequestsMatchEachAlone) {
  const auto a = random_prompt(37, model_->vocab_size(), 3);
  const auto b = random_prompt(90, model_->vocab_size(), 4);
  Harness h(*model_, s_);
  Sequence sa(a), sb(b);
  // Step 1: a's first 20 tokens with all of b; step 2: a's rest; step 3: both decode.
  auto first = h.step({{&sa, 20}, {&sb, int64_t(b.size())}});
  auto second = h.step({{&sa, int64_t(a.size()) - 20}});
  EXPECT_LE(rel_diff(first[1], prefill_logits(b, 0)), kTol);
  EXPECT_LE(rel_diff(second[0], prefill_logits(a, 0)), kTol);
  sa.tokens.push_back(testing::argmax(second[0]));
  sb.tokens.push_back(testing::argmax(first[1]));
  auto both = h.step({{&sb, 1}, {&sa, 1}});
  EXPECT_LE(rel_diff(both[1], prefill_logits(sa.tokens, 0)), kTol);
  EXPECT_LE(rel_diff(both[0], prefill_logits(sb.tokens, 0)), kTol);
}

// A GDN state saved inside a step (ForwardBatch::state_saves) is the state of a step cut
// at that offset, and the step's own results are those of the uncut step; two requests,
// one saving at a chunk-of-64 boundary of its step.
TEST_P(ModelConsistency, StateSavesInsideAStepMatchACutStep) {
  const CacheSpec spec = model_->cache_spec();
  if (std::none_of(spec.begin(), spec.end(),
                   [](const LayerCacheSpec& l) { return l.kind == LayerCacheSpec::Kind::kGdn; }))
    GTEST_SKIP() << "no GDN layers";
  const auto a = random_prompt(120, model_->vocab_size(), 21);
  const auto b = random_prompt(90, model_->vocab_size(), 22);
  Harness saved(*model_, s_, 96, 16, 6), cut(*model_, s_, 96, 16, 6);
  Sequence sa(a), sb(b), ca(a), cb(b);
  saved.step({{&sa, 20}});
  cut.step({{&ca, 20}});
  const int32_t slot_a = saved.take_slot(), slot_b = saved.take_slot();
  const auto both = saved.step({{&sa, 100}, {&sb, 90}}, nullptr,
                               {StateSave{0, 37, slot_a}, StateSave{1, 64, slot_b}});
  cut.step({{&ca, 37}, {&cb, 64}});
  const std::vector<float> at_a = cut.gdn_state(ca.state_slot), at_b = cut.gdn_state(cb.state_slot);
  const auto rest = cut.step({{&ca, 63}, {&cb, 26}});
  EXPECT_LE(rel_diff(both[0], rest[0]), kTol);
  EXPECT_LE(rel_diff(both[1], rest[1]), kTol);
  EXPECT_LE(rel_diff(saved.gdn_state(slot_a), at_a), kTol);
  EXPECT_LE(rel_diff(saved.gdn_state(slot_b), at_b), kTol);
  EXPECT_LE(rel_diff(saved.gdn_state(sa.state_slot), cut.gdn_state(ca.state_slot)), kTol);
  EXPECT_LE(rel_diff(saved.gdn_state(sb.state_slot), cut.gdn_state(cb.state_slot)), kTol);
  // The saved state is not the step's end state, nor one token off.
  EXPECT_GT(rel_diff(saved.gdn_state(slot_a), cut.gdn_state(ca.state_slot)), 1e-3);
}

TEST_P(ModelConsistency, UnfusedPreambleMatchesFused) {
  const auto ids = random_prompt(40, model_->vocab_size(), 5);
  vt::Stream s;
  auto unfused = load_model(fixture(GetParam()), s, {}, ModelOptions{.fuse_attn_preamble = false});
  Harness h(*unfused, s);
  Sequence seq(ids);
  EXPECT_LE(rel_diff(h.prefill(seq), prefill_logits(ids, 0)), 1e-6);
}

TEST_P(ModelConsistency, EqualMropeRowsMatchOneDimPositions) {
  const auto ids = random_prompt(40, model_->vocab_size(), 6);
  Harness h(*model_, s_);
  Sequence seq(ids, 3);
  if (model_->config().text.rope.mrope_section.empty()) {  // Qwen3: no MRoPE, refused
    EXPECT_THROW(h.prefill(seq), Error);
    return;
  }
  EXPECT_LE(rel_diff(h.prefill(seq), prefill_logits(ids, 0)), 1e-6);
}

// Input embeddings for some rows (how a vision tower's features enter) give exactly the
// forward of the tokens whose embeddings they are; bad rows are refused by name.
TEST_P(ModelConsistency, InputEmbeddingsReplaceTheirRowsExactly) {
  const auto ids = random_prompt(24, model_->vocab_size(), 5);
  auto other = random_prompt(24, model_->vocab_size(), 9);
  const std::vector<int32_t> rows = {0, 3, 4, 5, 11, 23};  // runs of 1 and 3 rows
  std::vector<int32_t> replaced = ids, embedded_ids;
  for (int32_t r : rows) {
    replaced[size_t(r)] = other[size_t(r)];
    embedded_ids.push_back(other[size_t(r)]);
  }
  // The embedding rows of `embedded_ids`, read from the checkpoint's own table.
  const io::ModelConfig& c = model_->config();
  io::Weights w = io::load_model_weights(
      s_, fixture(GetParam()), c, declare_params(c, true),
      {.language_model_only = true, .progress = io::LoadOptions::Progress::kNever});
  const vt::Tensor& table = w.at(io::language_model_prefix(c) + "embed_tokens.weight");
  InputEmbeddings e{rows,
                    vt::Tensor::empty({int64_t(rows.size()), c.text.hidden_size}, model_->dtype())};
  vt::embedding(s_, table, index_tensor(embedded_ids), e.values);

  Harness h(*model_, s_);
  Sequence seq(ids);
  const std::vector<float> with_embeds = h.step({{&seq, int64_t(ids.size())}}, &e)[0];
  EXPECT_EQ(with_embeds, prefill_logits(replaced, 0));
  EXPECT_NE(with_embeds, prefill_logits(ids, 0));

  InputEmbeddings bad{{3, 2}, e.values.slice(0, 0, 2)};
  Harness h2(*model_, s_);
  Sequence seq2(ids);
  EXPECT_THROW(h2.step({{&seq2, int64_t(ids.size())}}, &bad), Error);
  InputEmbeddings past{{23, 24}, e.values.slice(0, 0, 2)};
  Harness h3(*model_, s_);
  Sequence seq3(ids);
  EXPECT_THROW(h3.step({{&seq3, int64_t(ids.size())}}, &past), Error);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelConsistency,
                         ::testing::Values("tests/fixtures/qwen3-tiny",
                                           "tests/fixtures/qwen3_5-tiny-r2",
                                           "tests/fixtures/qwen3_5-tiny-r3-vl"),
                         [](const auto& info) {
                           std::string n = info.param;
                           n = n.substr(n.rfind('/') + 1);
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(ModelPreamble, UnfusedPathRefusesMropePositions) {
  vt::Stream s;
  auto model = load_model(fixture("tests/fixtures/qwen3_5-tiny-r2"), s, {},
                          ModelOptions{.fuse_attn_preamble = false});
  Harness h(*model, s);
  Sequence seq({1, 2, 3, 4, 5}, 3);
  try {
    h.prefill(seq);
    FAIL() << "the unfused preamble applied 1-D rotary to MRoPE positions";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MRoPE"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtllm::models
