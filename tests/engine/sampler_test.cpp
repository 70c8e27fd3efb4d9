#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include "base/error.h"

namespace vtllm::engine {
namespace {

std::vector<float> random_logits(std::mt19937& rng, int v, float scale = 2.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> x(v);
  for (auto& l : x) l = d(rng);
  return x;
}

SamplerRow row_of(const SamplingParams& p, std::span<const int32_t> out = {},
                  std::span<const int32_t> prompt = {}, std::span<const int32_t> eos = {}) {
  SamplerRow r;
  r.params = &p;
  r.output_token_ids = out;
  r.prompt_token_ids = prompt;
  r.eos_token_ids = eos;
  return r;
}

// Pearson chi-square of `counts` against probabilities `p` (cells with p > 0).
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n) {
  double chi = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0 but was sampled";
      continue;
    }
    const double e = p[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

TEST(Sampler, TemperatureSamplesMatchExactProbabilities) {
  std::mt19937 rng(7);
  const auto x = random_logits(rng, 10, 1.0f);
  SamplingParams p;
  p.temperature = 0.7f;
  Sampler s({.seed = 99});
  const int n = 40000;
  std::vector<int> counts(10, 0);
  for (int i = 0; i < n; ++i) ++counts[s.sample_row(x, row_of(p)).token];
  // Exact: softmax(x / T) in double.
  std::vector<double> prob(10);
  double z = 0;
  for (int i = 0; i < 10; ++i) z += prob[i] = std::exp(double(x[i]) / 0.7);
  for (auto& q : prob) q /= z;
  // 9 degrees of freedom: P(chi2 > 40) ~ 7e-6.
  EXPECT_LT(chi_square(counts, prob, n), 40.0);
}

TEST(Sampler, TruncatedSamplingMatchesBruteForceDistribution) {
  std::mt19937 rng(8);
  const auto x = random_logits(rng, 12, 1.5f);
  SamplingParams p;
  p.temperature = 1.3f;
  p.top_k = 8;
  p.top_p = 0.8f;
  p.min_p = 0.05f;
  // Brute force in double: scale, min_p, top_k, renormalise, top_p by ascending mass.
  std::vector<double> l(12);
  for (int i = 0; i < 12; ++i) l[i] = x[i] / 1.3;
  const double lmax = *std::max_element(l.begin(), l.end());
  std::vector<bool> keep(12, true);
  for (int i = 0; i < 12; ++i) keep[i] = std::exp(l[i] - lmax) >= 0.05;
  for (int i = 0; i < 12; ++i) {
    int larger = 0;
    for (int j = 0; j < 12; ++j) larger += keep[j] && l[j] > l[i];
    keep[i] = keep[i] && larger < 8;
  }
  auto mass = [&](const std::vector<bool>& k) {
    std::vector<double> q(12, 0);
    double z = 0;
    for (int i = 0; i < 12; ++i) z += q[i] = k[i] ? std::exp(l[i] - lmax) : 0;
    for (auto& v : q) v /= z;
    return q;
  };
  const auto q = mass(keep);
  std::vector<bool> keep2 = keep;
  const double qmax = *std::max_element(q.begin(), q.end());
  for (int i = 0; i < 12; ++i) {
    double below = 0;
    for (int j = 0; j < 12; ++j) below += q[j] <= q[i] ? q[j] : 0;
    keep2[i] = keep[i] && (q[i] == qmax || below > 1.0 - 0.8);
  }
  const auto want = mass(keep2);
  int kept = 0;
  for (bool k : keep2) kept += k;
  ASSERT_GE(kept, 2);  // the check is meaningless on a single token
  ASSERT_LT(kept, 8);  // and the truncation must bite

  Sampler s({.seed = 5});
  const int n = 40000;
  std::vector<int> counts(12, 0);
  for (int i = 0; i < n; ++i) ++counts[s.sample_row(x, row_of(p)).token];
  EXPECT_LT(chi_square(counts, want, n), 45.0);
}

TEST(Sampler, GreedyIsArgmaxAfterPenaltiesAndBias) {
  std::vector<float> x = {1.0f, 3.0f, 2.9f, 0.0f};
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s;
  EXPECT_EQ(s.sample_row(x, row_of(p)).token, 1);
  p.logit_bias = {{3, 5.0f}};
  EXPECT_EQ(s.sample_row(x, row_of(p)).token, 3);
  p.logit_bias.clear();
  p.presence_penalty = 0.5f;
  const std::vector<int32_t> out = {1};
  EXPECT_EQ(s.sample_row(x, row_of(p, out)).token, 2);  // 3.0 - 0.5 < 2.9
}

TEST(Sampler, MinTokensMasksStopAndEosTokens) {
  std::vector<float> x = {0.0f, 9.0f, 8.0f, 1.0f};
  SamplingParams p;
  p.temperature = 0.0f;
  p.min_tokens = 2;
  p.stop_token_ids = {2};
  const std::vector<int32_t> eos = {1};
  const std::vector<int32_t> one = {3};
  Sampler s;
  EXPECT_EQ(s.sample_row(x, row_of(p, one, {}, eos)).token, 3);
  p.ignore_eos = true;  // eos may be sampled, stop ids still not
  EXPECT_EQ(s.sample_row(x, row_of(p, one, {}, eos)).token, 1);
  const std::vector<int32_t> two = {3, 3};
  p.ignore_eos = false;
  EXPECT_EQ(s.sample_row(x, row_of(p, two, {}, eos)).token, 1);
}

TEST(Sampler, SeededRowsIgnoreTheRestOfTheBatch) {
  std::mt19937 rng(9);
  const int v = 50;
  SamplingParams seeded;
  seeded.temperature = 1.0f;
  seeded.top_p = 0.95f;
  seeded.seed = 1234;
  SamplingParams unseeded;
  unseeded.temperature = 1.0f;
  SamplingParams other_seed = seeded;
  other_seed.seed = 77;

  std::vector<std::vector<float>> steps;
  for (int i = 0; i < 40; ++i) steps.push_back(random_logits(rng, v));
  // Alone.
  std::vector<int32_t> alone;
  {
    Sampler s({.seed = 1});
    for (const auto& x : steps) alone.push_back(s.sample_row(x, row_of(seeded, alone)).token);
  }
  // In batches of varying composition and a different engine seed.
  std::vector<int32_t> batched, others;
  {
    Sampler s({.seed = 2});
    for (size_t i = 0; i < steps.size(); ++i) {
      std::vector<float> logits;
      std::vector<SamplerRow> rows;
      const int before = static_cast<int>(i % 3);
      for (int b = 0; b < before; ++b) {
        auto junk = random_logits(rng, v);
        logits.insert(logits.end(), junk.begin(), junk.end());
        rows.push_back(row_of(b % 2 ? unseeded : other_seed, others));
      }
      logits.insert(logits.end(), steps[i].begin(), steps[i].end());
      rows.push_back(row_of(seeded, batched));
      auto res = s.sample(logits, v, rows);
      batched.push_back(res.back().token);
    }
  }
  EXPECT_EQ(alone, batched);
  // A different seed gives a different sequence.
  std::vector<int32_t> reseeded;
  Sampler s;
  for (const auto& x : steps) reseeded.push_back(s.sample_row(x, row_of(other_seed, reseeded)).token);
  EXPECT_NE(alone, reseeded);
}

TEST(Sampler, UnseededRowsAdvanceTheEngineStream) {
  std::vector<float> x(64, 0.0f);  // uniform over 64 tokens
  SamplingParams p;
  Sampler a({.seed = 3}), b({.seed = 3}), c({.seed = 4});
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 30; ++i) {
    ta.push_back(a.sample_row(x, row_of(p)).token);
    tb.push_back(b.sample_row(x, row_of(p)).token);
    tc.push_back(c.sample_row(x, row_of(p)).token);
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  EXPECT_GT(std::set<int32_t>(ta.begin(), ta.end()).size(), 10u);
}

TEST(Sampler, RawLogprobsRankAndTopN) {
  std::mt19937 rng(10);
  auto x = random_logits(rng, 30);
  SamplingParams p;
  p.temperature = 0.0f;
  p.logprobs = 5;
  p.logit_bias = {{0, 100.0f}};  // forces token 0 whatever its raw logit
  Sampler s;
  const SampleResult r = s.sample_row(x, row_of(p));
  ASSERT_EQ(r.token, 0);
  double m = *std::max_element(x.begin(), x.end()), z = 0;
  for (float l : x) z += std::exp(double(l) - m);
  auto lp = [&](int i) { return double(x[i]) - m - std::log(z); };
  EXPECT_NEAR(r.logprob, lp(0), 1e-5);  // raw: the bias is not in it
  int rank = 0;
  for (int i = 0; i < 30; ++i) rank += x[i] >= x[0];
  EXPECT_EQ(r.rank, rank);
  ASSERT_EQ(r.top_logprobs.size(), 5u);
  std::vector<int> order(30);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return x[a] > x[b]; });
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(r.top_logprobs[i].token, order[i]);
    EXPECT_NEAR(r.top_logprobs[i].logprob, lp(order[i]), 1e-5);
  }
  // Processed mode reports the distribution actually sampled from.
  Sampler sp({.seed = 0, .logprobs_mode = LogprobsMode::kProcessed});
  EXPECT_GT(sp.sample_row(x, row_of(p)).logprob, -1e-3);
}

TEST(Sampler, BatchShapeIsChecked) {
  std::vector<float> x(10, 0.0f);
  SamplingParams p;
  std::vector<SamplerRow> rows = {row_of(p), row_of(p), row_of(p)};
  Sampler s;
  EXPECT_THROW(s.sample(x, 5, rows), Error);
  EXPECT_EQ(s.sample(x, 5, std::span(rows).first(2)).size(), 2u);
}

TEST(Sampler, EverythingMaskedIsAnError) {
  std::vector<float> x = {0.0f, 1.0f};
  SamplingParams p;
  p.min_tokens = 1;
  p.stop_token_ids = {0, 1};
  Sampler s;
  EXPECT_THROW(s.sample_row(x, row_of(p)), Error);
}

}  // namespace
}  // namespace vtllm::engine
