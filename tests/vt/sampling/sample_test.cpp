// vt::sample's contract on the CPU arm: validation names the bad field, the tie rules
// (top_k keeps every tie at the k-th value, top_p keeps tied tokens lower id first,
// greedy takes the lowest id), a fully masked row throws, mask rows are -inf where
// their bit is clear (logits_mask also for raw logprobs). Equality with the engine's
// Sampler on random inputs is tests/engine/device_sampler_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "vt/ops/sampling.h"

namespace vt {
namespace {

Tensor row_of(std::initializer_list<float> v) {
  Tensor t = Tensor::empty({1, int64_t(v.size())}, DType::kF32);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

SampleBatch one_row(const SampleRowParams& p) {
  SampleBatch b;
  b.rows = {p};
  b.edit_start = {0, 0};
  return b;
}

std::string error_of(Stream& s, const Tensor& t, const SampleBatch& b) {
  try {
    sample(s, t, b);
  } catch (const vtllm::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Sample, ValidationNamesTheProblem) {
  Stream s(Device::cpu());
  const Tensor t = row_of({1, 2, 3});
  SampleRowParams p;
  p.uniform = 1.0;
  EXPECT_NE(error_of(s, t, one_row(p)).find("uniform"), std::string::npos);
  p.uniform = 0.5;
  p.logprobs = kMaxDeviceLogprobs + 1;
  EXPECT_NE(error_of(s, t, one_row(p)).find("logprobs"), std::string::npos);
  p.logprobs = -1;
  SampleBatch b = one_row(p);
  b.edits = {{.token = 1}, {.token = 1}};
  b.edit_start = {0, 2};
  EXPECT_NE(error_of(s, t, b).find("twice"), std::string::npos);
  b.edits = {{.token = 3}};
  b.edit_start = {0, 1};
  EXPECT_NE(error_of(s, t, b).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(error_of(s, t, SampleBatch{}).find("row params"), std::string::npos);
}

TEST(Sample, TieRules) {
  Stream s(Device::cpu());
  // Greedy: the lowest id of the maxima.
  SampleRowParams g;
  g.temperature = 0;
  EXPECT_EQ(sample(s, row_of({1, 5, 2, 5}), one_row(g)).token[0], 1);
  // top_k = 1 keeps both tied maxima: u in the upper half draws the second.
  SampleRowParams k;
  k.top_k = 1;
  k.uniform = 0.75;
  EXPECT_EQ(sample(s, row_of({0, 4, 1, 4}), one_row(k)).token[0], 3);
  // top_p = 0.5 over two equal maxima (mass before the second = 0.5, not < 0.5): only
  // the lower id stays, whatever u.
  SampleRowParams p;
  p.top_p = 0.5f;
  p.uniform = 0.99;
  EXPECT_EQ(sample(s, row_of({6, 6}), one_row(p)).token[0], 0);
  p.top_p = 0.51f;  // now the second tie stays too
  EXPECT_EQ(sample(s, row_of({6, 6}), one_row(p)).token[0], 1);
}

TEST(Sample, EditsApplyInOrderAndAMaskedRowThrows) {
  Stream s(Device::cpu());
  SampleRowParams g;
  g.temperature = 0;
  SampleBatch b = one_row(g);
  b.bias = {10.0f, -4.0f};
  b.edits = {{.token = 0, .bias_begin = 0, .bias_end = 2}};  // 1 + 10 - 4 = 7 > 5
  b.edit_start = {0, 1};
  EXPECT_EQ(sample(s, row_of({1, 5}), b).token[0], 0);
  SampleRowParams t;
  SampleBatch m = one_row(t);
  m.edits = {{.token = 0, .masked = true}, {.token = 1, .masked = true}};
  m.edit_start = {0, 2};
  EXPECT_NE(error_of(s, row_of({1, 5}), m).find("masked"), std::string::npos);
}

}  // namespace
}  // namespace vt

namespace vt {
namespace {

// Step 0 by its definition: a logits_mask row samples and reports raw logprobs as the
// same logits with -inf written where the bit is clear; a token_mask row samples like
// that too but its raw logprobs are those of the unmasked logits.
TEST(Sample, MaskRowsActAsMinusInfinity) {
  Stream s(Device::cpu(), 2);
  const int64_t vocab = 1000, words = mask_words(vocab);
  std::mt19937 rng(31);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  for (int trial = 0; trial < 24; ++trial) {
    Tensor logits = Tensor::empty({1, vocab}, DType::kF32);
    for (int64_t i = 0; i < vocab; ++i) logits.data<float>()[i] = nd(rng);
    std::vector<uint32_t> mask(static_cast<size_t>(words));
    for (uint32_t& w : mask) w = uint32_t(rng()) & uint32_t(rng());  // ~1/4 allowed
    mask[0] |= 1u << 5;                                              // never empty
    Tensor cut = Tensor::empty({1, vocab}, DType::kF32);
    for (int64_t i = 0; i < vocab; ++i)
      cut.data<float>()[i] = mask_allows(mask.data(), i) ? logits.data<float>()[i] : -INFINITY;
    SampleRowParams p;
    p.temperature = trial % 3 == 0 ? 0.0f : 0.9f;
    p.top_k = trial % 4 == 1 ? 30 : 0;
    p.top_p = trial % 5 == 2 ? 0.8f : 1.0f;
    p.uniform = std::uniform_real_distribution<double>(0, 1)(rng);
    p.logprobs = 5;
    for (bool processed : {false, true}) {
      SampleBatch plain = one_row(p);
      plain.processed_logprobs = processed;
      const SampleOutput on_cut = sample(s, cut, plain);
      const SampleOutput on_raw = sample(s, logits, plain);
      for (bool logits_mask : {true, false}) {
        SampleBatch b = plain;
        b.bitmask = mask;
        (logits_mask ? b.rows[0].logits_mask : b.rows[0].token_mask) = 0;
        const SampleOutput got = sample(s, logits, b);
        const std::string at = "trial " + std::to_string(trial) +
                               (logits_mask ? " logits" : " token") +
                               (processed ? " processed" : " raw");
        EXPECT_EQ(got.token, on_cut.token) << at;
        EXPECT_TRUE(mask_allows(mask.data(), got.token[0])) << at;
        if (logits_mask || processed) {
          EXPECT_EQ(got.logprob, on_cut.logprob) << at;
          EXPECT_EQ(got.rank, on_cut.rank) << at;
          EXPECT_EQ(got.top_token, on_cut.top_token) << at;
          EXPECT_EQ(got.top_logprob, on_cut.top_logprob) << at;
        } else {  // the unmasked row's raw logprobs, at the (masked) token sampled
          EXPECT_EQ(got.top_token, on_raw.top_token) << at;
          EXPECT_EQ(got.top_logprob, on_raw.top_logprob) << at;
          const float* x = logits.data<float>();
          double z = 0;
          for (int64_t i = 0; i < vocab; ++i) z += std::exp(double(x[i]));
          const auto lp = [&](float v) { return float(double(v) - std::log(z)); };
          const float mine = lp(x[got.token[0]]);
          EXPECT_NEAR(got.logprob[0], mine, 1e-5) << at;
          EXPECT_EQ(got.rank[0],
                    std::count_if(x, x + vocab, [&](float v) { return lp(v) >= mine; }))
              << at;
        }
      }
    }
  }
}

TEST(Sample, MaskValidationNamesTheProblem) {
  Stream s(Device::cpu());
  const Tensor t = row_of({1, 2, 3});
  SampleBatch b = one_row({});
  b.bitmask = {1u, 2u};  // two rows of one word
  b.rows[0].logits_mask = 2;
  EXPECT_NE(error_of(s, t, b).find("mask rows"), std::string::npos);
  b.rows[0].logits_mask = 1;
  EXPECT_EQ(sample(s, t, b).token[0], 1);  // mask row 1 allows only token 1
  b.bitmask = {};
  EXPECT_NE(error_of(s, t, b).find("mask rows"), std::string::npos);
  b.bitmask = {7u, 0u, 0u};
  b.rows[0].logits_mask = -1;
  const Tensor wide = Tensor::empty({1, 40}, DType::kF32);
  EXPECT_NE(error_of(s, wide, b).find("multiple"), std::string::npos);
}

}  // namespace
}  // namespace vt
