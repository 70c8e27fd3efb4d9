#include "engine/logits_processing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "base/error.h"

namespace vtllm::engine {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> random_logits(std::mt19937& rng, int v, float scale = 3.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> x(v);
  for (auto& l : x) l = d(rng);
  return x;
}

std::vector<double> softmax_double(const std::vector<float>& x) {
  double m = -INFINITY;
  for (float l : x) m = std::max<double>(m, l);
  std::vector<double> p(x.size());
  double z = 0;
  for (size_t i = 0; i < x.size(); ++i) z += p[i] = std::exp(double(x[i]) - m);
  for (auto& q : p) q /= z;
  return p;
}

TEST(LogitsProcessing, PenaltiesMatchAHandComputedExample) {
  std::vector<float> x = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
  const std::vector<int32_t> prompt = {0, 1};
  const std::vector<int32_t> output = {2, 2, 4};
  apply_penalties(x, prompt, output, 2.0f, 0.25f, 0.5f);
  // token 0: prompt, positive -> 2/2; token 1: prompt, negative -> -1*2;
  // token 2: output twice, 0.5/2 - 0.25*2 - 0.5; token 3 untouched;
  // token 4: output once, -2*2 - 0.25 - 0.5.
  const std::vector<float> want = {1.0f, -2.0f, 0.25f - 0.5f - 0.5f, 3.0f, -4.0f - 0.75f};
  for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(x[i], want[i]) << "token " << i;
}

TEST(LogitsProcessing, PenaltiesRejectTokensOutsideTheVocabulary) {
  std::vector<float> x(4, 1.0f);
  const std::vector<int32_t> bad = {9};
  EXPECT_THROW(apply_penalties(x, bad, {}, 1.5f, 0, 0), Error);
}

TEST(LogitsProcessing, TopKKeepsExactlyTheLargestAndBoundaryTies) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 50; ++trial) {
    auto x = random_logits(rng, 300);
    const int k = 1 + trial * 5;
    auto y = x;
    apply_top_k(y, k);
    for (size_t i = 0; i < x.size(); ++i) {
      int larger = 0;
      for (float l : x) larger += l > x[i];
      EXPECT_EQ(y[i] != kNegInf, larger < k) << "token " << i << " k " << k;
      if (y[i] != kNegInf) {
        EXPECT_EQ(y[i], x[i]);
      }
    }
  }
  std::vector<float> tied = {1, 3, 3, 3, 0};
  apply_top_k(tied, 2);
  EXPECT_EQ(tied, (std::vector<float>{kNegInf, 3, 3, 3, kNegInf}));
}

TEST(LogitsProcessing, TopPMatchesBruteForceMass) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 60; ++trial) {
    auto x = random_logits(rng, 200, 1.0f + trial % 4);
    const float p = 0.05f + 0.9f * (trial % 20) / 19.0f;
    auto y = x;
    apply_top_p(y, p);
    const auto prob = softmax_double(x);
    const double pmax = *std::max_element(prob.begin(), prob.end());
    for (size_t i = 0; i < x.size(); ++i) {
      // Removed iff the mass of tokens no more likely than i (i included) is <= 1 - p.
      double below = 0;
      for (double q : prob) below += q <= prob[i] ? q : 0;
      const bool keep = prob[i] == pmax || below > 1.0 - p;
      if (std::abs(below - (1.0 - p)) < 1e-5) continue;  // float vs double at the edge
      EXPECT_EQ(y[i] != kNegInf, keep) << "token " << i << " p " << p;
    }
  }
}

TEST(LogitsProcessing, TopPKeepsTheMostLikelyTokenEvenForTinyP) {
  std::vector<float> x = {0.0f, 5.0f, 1.0f};
  apply_top_p(x, 1e-6f);
  EXPECT_EQ(x, (std::vector<float>{kNegInf, 5.0f, kNegInf}));
}

TEST(LogitsProcessing, MinPMatchesBruteForceRatio) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    auto x = random_logits(rng, 250);
    const float min_p = 0.01f + 0.02f * trial;
    auto y = x;
    apply_min_p(y, min_p);
    const auto prob = softmax_double(x);
    const double pmax = *std::max_element(prob.begin(), prob.end());
    for (size_t i = 0; i < x.size(); ++i) {
      const double ratio = prob[i] / pmax;
      if (std::abs(ratio - min_p) < 1e-5) continue;
      EXPECT_EQ(y[i] != kNegInf, ratio >= min_p) << "token " << i;
    }
  }
}

TEST(LogitsProcessing, ArgmaxTakesLowestIdOnTies) {
  std::vector<float> x = {1, 4, 2, 4, 4};
  EXPECT_EQ(argmax(x), 1);
}

TEST(LogitsProcessing, LogSoftmaxMatchesDouble) {
  std::mt19937 rng(4);
  auto x = random_logits(rng, 1000, 8.0f);
  x[7] = kNegInf;
  const auto lp = log_softmax(x);
  const auto p = softmax_double(x);
  for (size_t i = 0; i < x.size(); ++i) {
    if (i == 7) {
      EXPECT_EQ(lp[i], kNegInf);
      continue;
    }
    EXPECT_NEAR(lp[i], std::log(p[i]), 1e-4 * std::max(1.0, std::abs(std::log(p[i]))));
  }
}

TEST(LogitsProcessing, InverseCdfHitsEveryTokenAtItsBoundary) {
  const std::vector<float> x = {std::log(0.2f), kNegInf, std::log(0.5f), std::log(0.3f)};
  EXPECT_EQ(sample_from_logits(x, 0.0), 0);
  EXPECT_EQ(sample_from_logits(x, 0.19), 0);
  EXPECT_EQ(sample_from_logits(x, 0.21), 2);
  EXPECT_EQ(sample_from_logits(x, 0.69), 2);
  EXPECT_EQ(sample_from_logits(x, 0.71), 3);
  EXPECT_EQ(sample_from_logits(x, 0.9999999), 3);
  const std::vector<float> masked = {kNegInf, kNegInf};
  EXPECT_THROW(sample_from_logits(masked, 0.5), Error);
}

}  // namespace
}  // namespace vtllm::engine
