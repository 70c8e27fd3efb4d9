#include "server/metrics.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "base/error.h"

namespace vtllm::server {

namespace {

// vLLM's bucket bounds (vllm/v1/metrics/loggers.py).
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kE2eBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                         5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                         60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// 1, 2, 5, 10, 20, 50, ... up to `max` (vLLM's build_1_2_5_buckets).
std::vector<double> one_two_five(int64_t max) {
  std::vector<double> b;
  for (double m = 1;; m *= 10) {
    for (double k : {1.0, 2.0, 5.0}) {
      if (k * m > double(max)) return b;
      b.push_back(k * m);
    }
  }
}

// Prometheus floats: shortest round-trip form, +Inf spelled as Prometheus does.
std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  // Prefer the shorter %g form when it round-trips.
  std::snprintf(buf, sizeof buf, "%g", v);
  if (std::strtod(buf, nullptr) == v) s = buf;
  return s;
}

// Label values escape backslash, double quote and newline.
std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += str_cat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void sample(std::string& out, const std::string& name, const std::string& labels, double v) {
  out += str_cat(name, "{", labels, "} ", num(v), "\n");
}

void histogram(std::string& out, const std::string& name, const char* help, const std::string& labels,
               const Histogram& h) {
  header(out, name, "histogram", help);
  const Histogram::Snapshot s = h.snapshot();
  for (size_t i = 0; i < s.upper_bounds.size(); ++i) {
    sample(out, str_cat(name, "_bucket"), str_cat(labels, ",le=\"", num(s.upper_bounds[i]), "\""),
           double(s.cumulative[i]));
  }
  sample(out, str_cat(name, "_bucket"), str_cat(labels, ",le=\"+Inf\""), double(s.count));
  sample(out, str_cat(name, "_sum"), labels, s.sum);
  sample(out, str_cat(name, "_count"), labels, double(s.count));
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  VT_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()) &&
               std::adjacent_find(bounds_.begin(), bounds_.end()) == bounds_.end(),
           "histogram bucket bounds must be strictly increasing");
}

void Histogram::observe(double v) {
  // Bucket i holds bounds_[i-1] < v <= bounds_[i] (Prometheus' le is inclusive).
  const size_t i = size_t(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += v;
  ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) s.cumulative.push_back(running += c);
  s.sum = sum_;
  s.count = count_;
  return s;
}

ServerMetrics::ServerMetrics(std::string model_name, int64_t max_model_len)
    : time_to_first_token(kTtftBuckets),
      inter_token_latency(kItlBuckets),
      e2e_request_latency(kE2eBuckets),
      request_queue_time(kE2eBuckets),
      request_prefill_time(kE2eBuckets),
      request_decode_time(kE2eBuckets),
      request_inference_time(kE2eBuckets),
      request_prompt_tokens(one_two_five(std::max<int64_t>(max_model_len, 1))),
      request_generation_tokens(one_two_five(std::max<int64_t>(max_model_len, 1))),
      request_params_n({1, 2, 5, 10, 20}),
      request_params_max_tokens(one_two_five(std::max<int64_t>(max_model_len, 1))),
      model_name_(std::move(model_name)) {}

std::string ServerMetrics::render(const engine::SchedulerStats& e) const {
  return render_with("vtllm:", e) + render_with("vllm:", e);
}

std::string ServerMetrics::render_with(const std::string& prefix,
                                       const engine::SchedulerStats& e) const {
  const std::string labels = str_cat("model_name=\"", escape_label(model_name_), "\"");
  std::string out;
  auto gauge = [&](const char* suffix, const char* help, double v) {
    const std::string name = prefix + suffix;
    header(out, name, "gauge", help);
    sample(out, name, labels, v);
  };
  auto counter = [&](const char* suffix, const char* help, double v) {
    const std::string name = prefix + suffix;
    header(out, name, "counter", help);
    sample(out, name, labels, v);
  };
  gauge("num_requests_running", "Number of requests in model execution batches.",
        e.num_running);
  gauge("num_requests_waiting", "Number of requests waiting to be processed.", e.num_waiting);
  gauge("kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", e.kv.usage);
  gauge("kv_cache_blocks_used", "KV-cache blocks held by live requests.",
        double(e.kv.num_blocks - e.kv.num_free_blocks));
  gauge("kv_cache_blocks_total", "Usable KV-cache blocks.", double(e.kv.num_blocks));
  gauge("state_slots_used", "Recurrent-state slots held by live requests.",
        double(e.kv.num_state_slots - e.kv.num_free_state_slots));
  counter("num_preemptions_total", "Cumulative number of preemptions.",
          double(e.num_preemptions));
  counter("prompt_tokens_total", "Number of prefill tokens processed.",
          prompt_tokens.value());
  counter("prefix_cache_queries_total",
          "Prefix cache queries, in terms of number of queried tokens.",
          double(e.kv.prefix_queries));
  counter("prefix_cache_hits_total",
          "Prefix cache hits, in terms of number of cached tokens.", double(e.kv.prefix_hits));
  counter("generation_tokens_total", "Number of generation tokens processed.",
          generation_tokens.value());
  header(out, prefix + "request_success_total", "counter", "Count of finished requests by reason.");
  sample(out, prefix + "request_success_total", labels + ",finished_reason=\"stop\"",
         finished_stop.value());
  sample(out, prefix + "request_success_total", labels + ",finished_reason=\"length\"",
         finished_length.value());
  sample(out, prefix + "request_success_total", labels + ",finished_reason=\"abort\"",
         finished_abort.value());
  histogram(out, prefix + "time_to_first_token_seconds",
            "Histogram of time to first token in seconds.", labels, time_to_first_token);
  histogram(out, prefix + "inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.", labels, inter_token_latency);
  histogram(out, prefix + "e2e_request_latency_seconds",
            "Histogram of end to end request latency in seconds.", labels, e2e_request_latency);
  histogram(out, prefix + "request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.", labels, request_queue_time);
  histogram(out, prefix + "request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.", labels, request_prefill_time);
  histogram(out, prefix + "request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.", labels, request_decode_time);
  histogram(out, prefix + "request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.", labels,
            request_inference_time);
  histogram(out, prefix + "request_prompt_tokens", "Number of prefill tokens processed.", labels,
            request_prompt_tokens);
  histogram(out, prefix + "request_generation_tokens", "Number of generation tokens processed.",
            labels, request_generation_tokens);
  histogram(out, prefix + "request_params_n", "Histogram of the n request parameter.", labels,
            request_params_n);
  histogram(out, prefix + "request_params_max_tokens",
            "Histogram of the max_tokens request parameter.", labels, request_params_max_tokens);
  return out;
}

}  // namespace vtllm::server
