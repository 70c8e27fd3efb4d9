#include "server/metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace vtllm::server {
namespace {

// A minimal reader of the exposition format: "name{labels} value" lines keyed by
// "name{labels}", comments checked for HELP/TYPE pairs.
std::map<std::string, double> parse_exposition(const std::string& text,
                                               std::map<std::string, std::string>* types) {
  std::map<std::string, double> samples;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      (*types)[name] = type;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    samples[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return samples;
}

TEST(Metrics, HistogramBucketsMatchBruteForceCounts) {
  const std::vector<double> bounds = {0.01, 0.1, 0.5, 1, 5};
  Histogram h(bounds);
  std::mt19937 rng(3);
  std::lognormal_distribution<double> dist(-2, 2);
  std::vector<double> seen;
  for (int i = 0; i < 2000; ++i) seen.push_back(dist(rng));
  seen.push_back(0.1);  // exactly on a bound: counted in that bucket (le is inclusive)
  for (double v : seen) h.observe(v);
  const Histogram::Snapshot s = h.snapshot();
  ASSERT_EQ(s.cumulative.size(), bounds.size() + 1);
  double sum = 0;
  for (double v : seen) sum += v;
  EXPECT_NEAR(s.sum, sum, 1e-9 * sum);
  EXPECT_EQ(s.count, seen.size());
  for (size_t b = 0; b < bounds.size(); ++b) {
    uint64_t n = 0;
    for (double v : seen) n += v <= bounds[b];
    EXPECT_EQ(s.cumulative[b], n) << "le=" << bounds[b];
  }
  EXPECT_EQ(s.cumulative.back(), seen.size());
}

TEST(Metrics, CountersAreExactUnderConcurrentUpdates) {
  ServerMetrics m("tiny");
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        m.prompt_tokens.inc(t + 1);
        m.e2e_request_latency.observe(0.001 * (i % 7));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(m.prompt_tokens.value(), 1000.0 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8));
  EXPECT_EQ(m.e2e_request_latency.snapshot().count, 8000u);
}

TEST(Metrics, RenderUsesVllmNamesAndEngineGauges) {
  ServerMetrics m("my \"model\"");
  m.prompt_tokens.inc(12);
  m.generation_tokens.inc(30);
  m.finished_length.inc();
  m.time_to_first_token.observe(0.03);
  m.time_to_first_token.observe(3);
  engine::SchedulerStats e;
  e.num_running = 3;
  e.num_waiting = 4;
  e.kv.usage = 0.25;
  e.kv.num_blocks = 68;
  e.kv.num_free_blocks = 51;
  std::map<std::string, std::string> types;
  const auto s = parse_exposition(m.render(e), &types);
  const std::string l = "model_name=\"my \\\"model\\\"\"";
  EXPECT_EQ(s.at("vtllm:num_requests_running{" + l + "}"), 3);
  EXPECT_EQ(s.at("vtllm:num_requests_waiting{" + l + "}"), 4);
  EXPECT_EQ(s.at("vtllm:kv_cache_usage_perc{" + l + "}"), 0.25);
  EXPECT_EQ(s.at("vtllm:kv_cache_blocks_used{" + l + "}"), 17);
  EXPECT_EQ(s.at("vtllm:prompt_tokens_total{" + l + "}"), 12);
  EXPECT_EQ(s.at("vtllm:generation_tokens_total{" + l + "}"), 30);
  EXPECT_EQ(s.at("vtllm:request_success_total{" + l + ",finished_reason=\"length\"}"), 1);
  EXPECT_EQ(s.at("vtllm:request_success_total{" + l + ",finished_reason=\"stop\"}"), 0);
  EXPECT_EQ(s.at("vtllm:time_to_first_token_seconds_bucket{" + l + ",le=\"0.02\"}"), 0);
  EXPECT_EQ(s.at("vtllm:time_to_first_token_seconds_bucket{" + l + ",le=\"0.04\"}"), 1);
  EXPECT_EQ(s.at("vtllm:time_to_first_token_seconds_bucket{" + l + ",le=\"2.5\"}"), 1);
  EXPECT_EQ(s.at("vtllm:time_to_first_token_seconds_bucket{" + l + ",le=\"5\"}"), 2);
  EXPECT_EQ(s.at("vtllm:time_to_first_token_seconds_bucket{" + l + ",le=\"+Inf\"}"), 2);
  EXPECT_DOUBLE_EQ(s.at("vtllm:time_to_first_token_seconds_sum{" + l + "}"), 3.03);
  EXPECT_EQ(s.at("vtllm:e2e_request_latency_seconds_count{" + l + "}"), 0);
  EXPECT_EQ(types.at("vtllm:prompt_tokens_total"), "counter");
  EXPECT_EQ(types.at("vtllm:kv_cache_usage_perc"), "gauge");
  EXPECT_EQ(types.at("vtllm:inter_token_latency_seconds"), "histogram");
  // Every metric also under vLLM's own prefix, with the same value.
  for (const auto& [name, value] : s) {
    if (name.rfind("vtllm:", 0) != 0) continue;
    const std::string twin = "vllm:" + name.substr(6);
    ASSERT_TRUE(s.count(twin)) << twin;
    EXPECT_EQ(s.at(twin), value) << twin;
  }
}

TEST(Metrics, TokenHistogramsUseOneTwoFiveBucketsUpToTheContext) {
  ServerMetrics m("m", 600);
  m.request_prompt_tokens.observe(7);
  m.request_prompt_tokens.observe(600);
  m.request_queue_time.observe(0.4);
  std::map<std::string, std::string> types;
  const auto s = parse_exposition(m.render({}), &types);
  const std::string l = "model_name=\"m\"";
  for (const char* le : {"1", "2", "5", "10", "20", "50", "100", "200", "500"})
    EXPECT_TRUE(s.count("vllm:request_prompt_tokens_bucket{" + l + ",le=\"" + le + "\"}")) << le;
  EXPECT_FALSE(s.count("vllm:request_prompt_tokens_bucket{" + l + ",le=\"1000\"}"));
  EXPECT_EQ(s.at("vllm:request_prompt_tokens_bucket{" + l + ",le=\"5\"}"), 0);
  EXPECT_EQ(s.at("vllm:request_prompt_tokens_bucket{" + l + ",le=\"10\"}"), 1);
  EXPECT_EQ(s.at("vllm:request_prompt_tokens_bucket{" + l + ",le=\"+Inf\"}"), 2);
  EXPECT_EQ(s.at("vllm:request_queue_time_seconds_bucket{" + l + ",le=\"0.3\"}"), 0);
  EXPECT_EQ(s.at("vllm:request_queue_time_seconds_bucket{" + l + ",le=\"0.5\"}"), 1);
}

}  // namespace
}  // namespace vtllm::server
