// Tests of the benchmark client's pure parts: percentiles against a brute-force
// reference, run summaries against hand-computed values, the SSE parser against
// every way of splitting a stream, and the seeded workload.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench/sse.h"
#include "bench/stats.h"
#include "bench/workload.h"

namespace vtllm::bench {
namespace {

// numpy.percentile's default ("linear"): index q/100 * (n-1), written independently.
double reference_percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const long double idx = (long double)q / 100.0L * (long double)(v.size() - 1);
  const long double below = std::floor(idx);
  const long double above = std::ceil(idx);
  const long double lo = v[size_t(below)], hi = v[size_t(above)];
  return double(lo + (hi - lo) * (idx - below));
}

TEST(BenchStats, PercentileMatchesNumpyLinearOnRandomData) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 3.0);
  for (int n : {1, 2, 3, 10, 101, 1000}) {
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) x = u(rng);
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (double q : {0.0, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 100.0})
      EXPECT_NEAR(percentile(sorted, q), reference_percentile(v, q), 1e-12) << n << " " << q;
  }
}

TEST(BenchStats, PercentileOfKnownList) {
  // numpy.percentile([1, 2, 3, 4], [50, 90, 99]) = [2.5, 3.7, 3.97]
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_NEAR(percentile(v, 90), 3.7, 1e-12);
  EXPECT_NEAR(percentile(v, 99), 3.97, 1e-12);
  EXPECT_THROW(percentile({}, 50), Error);
  EXPECT_THROW(percentile(v, 101), Error);
}

TEST(BenchStats, SummarizeIsOrderIndependent) {
  std::vector<double> v = {5, 1, 4, 2, 3};
  const Distribution d = summarize(v);
  EXPECT_EQ(d.count, 5);
  EXPECT_DOUBLE_EQ(d.mean, 3);
  EXPECT_DOUBLE_EQ(d.median, 3);
  EXPECT_DOUBLE_EQ(d.min, 1);
  EXPECT_DOUBLE_EQ(d.max, 5);
  EXPECT_NEAR(d.p90, 4.6, 1e-12);
  EXPECT_EQ(summarize({}).count, 0);
}

TEST(BenchStats, RunSummaryComputesTpotThroughputAndFailures) {
  RequestTiming a;  // 5 tokens: ttft 0.1, then 4 gaps of 0.02 -> e2e 0.18, tpot 0.02
  a.ok = true;
  a.ttft_s = 0.1;
  a.itl_s = {0.02, 0.02, 0.02, 0.02};
  a.e2e_s = 0.18;
  a.prompt_tokens = 10;
  a.output_tokens = 5;
  RequestTiming b;  // 1 token: no TPOT
  b.ok = true;
  b.ttft_s = 0.3;
  b.e2e_s = 0.3;
  b.prompt_tokens = 10;
  b.output_tokens = 1;
  RequestTiming c;
  c.error = "HTTP 500";
  const RunSummary s = summarize_run({a, b, c}, 2, 2.0, 5);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.short_outputs, 1);
  EXPECT_EQ(s.total_output_tokens, 6);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 3.0);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 13.0);
  EXPECT_EQ(s.tpot_s.count, 1);
  EXPECT_NEAR(s.tpot_s.mean, 0.02, 1e-12);
  EXPECT_EQ(s.itl_s.count, 4);
  EXPECT_NEAR(s.ttft_s.mean, 0.2, 1e-12);
  ASSERT_EQ(s.first_errors.size(), 1u);
  EXPECT_EQ(s.first_errors[0], "HTTP 500");
}

std::vector<std::string> parse_in_pieces(const std::string& stream, const std::vector<size_t>& cuts) {
  SseParser p;
  std::vector<std::string> out;
  size_t pos = 0;
  for (size_t cut : cuts) {
    for (auto& e : p.feed(std::string_view(stream).substr(pos, cut - pos))) out.push_back(e);
    pos = cut;
  }
  for (auto& e : p.feed(std::string_view(stream).substr(pos))) out.push_back(e);
  for (auto& e : p.finish()) out.push_back(e);
  return out;
}

TEST(BenchSse, EveryTwoWaySplitGivesTheSameEvents) {
  const std::string stream =
      ": keep-alive comment\r\n\r\n"
      "data: {\"a\":1}\r\n\r\n"
      "event: x\ndata:{\"b\":2}\n\n"
      "data: line1\ndata: line2\n\n"
      "id: 3\rdata: [DONE]\r\r";
  const std::vector<std::string> want = {"{\"a\":1}", "{\"b\":2}", "line1\nline2", "[DONE]"};
  for (size_t i = 0; i <= stream.size(); ++i)
    for (size_t j = i; j <= stream.size(); j += 7) EXPECT_EQ(parse_in_pieces(stream, {i, j}), want) << i << "," << j;
}

TEST(BenchSse, UnterminatedLastEventComesOutAtFinish) {
  SseParser p;
  EXPECT_TRUE(p.feed("data: {\"x\":1}").empty());
  EXPECT_EQ(p.finish(), std::vector<std::string>{"{\"x\":1}"});
  SseParser q;
  EXPECT_TRUE(q.feed("data: tail\n").empty());
  EXPECT_EQ(q.finish(), std::vector<std::string>{"tail"});
}

TEST(BenchWorkload, PromptsAreSeededInRangeAndPrefixStable) {
  WorkloadConfig c;
  c.input_len = 64;
  c.seed = 3;
  c.token_lo = 500;
  c.token_hi = 600;
  const auto a = make_prompts(c, 10);
  const auto b = make_prompts(c, 4);
  ASSERT_EQ(a.size(), 10u);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(a[i].ids, b[i].ids);
  std::vector<int> seen(100, 0);
  for (const Prompt& p : a) {
    ASSERT_EQ(p.ids.size(), 64u);
    EXPECT_EQ(p.nominal_tokens, 64);
    for (int32_t id : p.ids) {
      ASSERT_GE(id, 500);
      ASSERT_LT(id, 600);
      ++seen[size_t(id - 500)];
    }
  }
  // 640 draws over 100 values: a uniform generator leaves few values unseen (expected ~0.2).
  EXPECT_LE(std::count(seen.begin(), seen.end(), 0), 5);
  EXPECT_NE(a[0].ids, a[1].ids);
  c.seed = 4;
  EXPECT_NE(make_prompts(c, 1)[0].ids, a[0].ids);
}

TEST(BenchWorkload, TextPromptsHaveInputLenWords) {
  WorkloadConfig c;
  c.kind = PromptKind::kText;
  c.input_len = 33;
  const auto p = make_prompts(c, 2);
  EXPECT_TRUE(p[0].ids.empty());
  EXPECT_EQ(std::count(p[0].text.begin(), p[0].text.end(), ' '), 32);
  EXPECT_NE(p[0].text, p[1].text);
  EXPECT_THROW(parse_prompt_kind("words"), Error);
}

}  // namespace
}  // namespace vtllm::bench
