// Server metrics in the Prometheus text exposition format (version 0.0.4), with
// vLLM's metric names and a model_name label, each written twice: under the `vtllm:`
// prefix and under vLLM's own `vllm:` (so vLLM's dashboards and alerts work unchanged).
//
// Counters and histograms are updated from many server threads (lock-free
// counters, one mutex per histogram); gauges are read from the engine's
// scheduler stats when the page is rendered. Exposed:
//   vtllm:num_requests_running, vtllm:num_requests_waiting       gauges
//   vtllm:kv_cache_usage_perc                                      gauge, [0, 1]
//   vtllm:kv_cache_blocks_used, vtllm:kv_cache_blocks_total        gauges (leaks show here)
//   vtllm:state_slots_used, vtllm:num_preemptions_total
//   vtllm:prompt_tokens_total, vtllm:generation_tokens_total       counters
//   vtllm:prefix_cache_queries_total, vtllm:prefix_cache_hits_total counters, in tokens:
//     every admitted request's tokens, and those of them found in the prefix cache
//   vtllm:request_success_total{finished_reason=stop|length|abort} counter
//   vtllm:time_to_first_token_seconds, vtllm:inter_token_latency_seconds,
//   vtllm:e2e_request_latency_seconds,
//   vtllm:request_queue_time_seconds (arrival -> first scheduled),
//   vtllm:request_prefill_time_seconds (first scheduled -> first token),
//   vtllm:request_decode_time_seconds (first token -> last token),
//   vtllm:request_inference_time_seconds (first scheduled -> last token)
//                                                                  histograms (vLLM's buckets)
//   vtllm:request_prompt_tokens, vtllm:request_generation_tokens,
//   vtllm:request_params_n, vtllm:request_params_max_tokens       histograms (1-2-5 buckets
//                                                                  up to max_model_len)
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/scheduler.h"

namespace vtllm::server {

class Counter {
 public:
  void inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Cumulative buckets with the given (increasing) upper bounds plus +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);

  void observe(double v);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  // max_model_len bounds the token-count histograms' buckets (vLLM's build_1_2_5_buckets).
  explicit ServerMetrics(std::string model_name, int64_t max_model_len = 4096);

  Counter prompt_tokens;
  Counter generation_tokens;
  Counter finished_stop;
  Counter finished_length;
  Counter finished_abort;
  Histogram time_to_first_token;
  Histogram inter_token_latency;
  Histogram e2e_request_latency;
  Histogram request_queue_time;
  Histogram request_prefill_time;
  Histogram request_decode_time;
  Histogram request_inference_time;
  Histogram request_prompt_tokens;
  Histogram request_generation_tokens;
  Histogram request_params_n;
  Histogram request_params_max_tokens;

  // The whole /metrics page: every metric under both prefixes.
  std::string render(const engine::SchedulerStats& engine) const;

 private:
  std::string render_with(const std::string& prefix, const engine::SchedulerStats& e) const;
  std::string model_name_;
};

}  // namespace vtllm::server
