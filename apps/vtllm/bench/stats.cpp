#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"

namespace vtllm::bench {

double percentile(const std::vector<double>& sorted, double q) {
  VT_CHECK(!sorted.empty(), "percentile of an empty list");
  VT_CHECK(q >= 0 && q <= 100, "percentile ", q, " is outside [0, 100]");
  const double rank = q / 100.0 * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (rank - double(lo)) * (sorted[hi] - sorted[lo]);
}

Distribution summarize(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = int64_t(values.size());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
  d.median = percentile(values, 50);
  d.p90 = percentile(values, 90);
  d.p99 = percentile(values, 99);
  d.min = values.front();
  d.max = values.back();
  return d;
}

RunSummary summarize_run(const std::vector<RequestTiming>& requests, int concurrency,
                         double duration_s, int64_t expected_output_tokens) {
  RunSummary s;
  s.concurrency = concurrency;
  s.num_requests = int64_t(requests.size());
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestTiming& r : requests) {
    if (!r.ok) {
      ++s.failed;
      if (s.first_errors.size() < 5) s.first_errors.push_back(r.error);
      continue;
    }
    ++s.completed;
    s.total_prompt_tokens += r.prompt_tokens;
    s.total_output_tokens += r.output_tokens;
    if (expected_output_tokens > 0 && r.output_tokens < expected_output_tokens) ++s.short_outputs;
    ttft.push_back(r.ttft_s);
    e2e.push_back(r.e2e_s);
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    if (r.output_tokens > 1) tpot.push_back((r.e2e_s - r.ttft_s) / double(r.output_tokens - 1));
  }
  if (duration_s > 0) {
    s.request_throughput = double(s.completed) / duration_s;
    s.output_throughput = double(s.total_output_tokens) / duration_s;
    s.total_token_throughput = double(s.total_prompt_tokens + s.total_output_tokens) / duration_s;
  }
  s.ttft_s = summarize(std::move(ttft));
  s.tpot_s = summarize(std::move(tpot));
  s.itl_s = summarize(std::move(itl));
  s.e2e_s = summarize(std::move(e2e));
  return s;
}

}  // namespace vtllm::bench
