// Per-request measurements of a serving benchmark and their summary, as vLLM's
// `bench serve` reports them.
//
// Definitions (all times in seconds from the moment the request was sent):
//   TTFT  time to the first token event of the stream;
//   ITL   gaps between consecutive token events (one list per request);
//   TPOT  (e2e - ttft) / (output_tokens - 1), only for requests with > 1 output token;
//   E2EL  time to the end of the stream.
// Percentiles interpolate linearly between order statistics (numpy's default, which
// vLLM's benchmark uses), so results are comparable with its tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vtllm::bench {

struct RequestTiming {
  bool ok = false;
  std::string error;          // why it failed, when !ok
  double ttft_s = 0;
  std::vector<double> itl_s;  // token-event gaps after the first
  double e2e_s = 0;
  int64_t prompt_tokens = 0;  // from the server's usage when given, else what was sent
  int64_t output_tokens = 0;  // usage.completion_tokens when given, else token events
  // usage.prompt_tokens_details.cached_tokens, or llama.cpp's timings.cache_n; -1: not given.
  int64_t cached_tokens = -1;
  // Kept only when CompletionParams::keep_output: the streamed text, and the output ids
  // when the server sends them (vLLM's choices[].token_ids, llama.cpp's "tokens").
  std::string text;
  std::vector<int32_t> token_ids;
};

struct Distribution {
  int64_t count = 0;
  double mean = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0;
};

// The q-th percentile (0..100) of `sorted` (ascending, non-empty), interpolating linearly.
double percentile(const std::vector<double>& sorted, double q);

// Summary of `values` (any order); all zero with count 0 when empty.
Distribution summarize(std::vector<double> values);

struct RunSummary {
  int concurrency = 0;
  int64_t num_requests = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t short_outputs = 0;   // completed with fewer output tokens than asked for
  double duration_s = 0;       // wall time of the whole closed loop
  int64_t total_prompt_tokens = 0;
  int64_t total_output_tokens = 0;
  double request_throughput = 0;      // completed / duration
  double output_throughput = 0;       // output tokens / duration
  double total_token_throughput = 0;  // (prompt + output) tokens / duration
  Distribution ttft_s, tpot_s, itl_s, e2e_s;
  std::vector<std::string> first_errors;  // up to 5, for the report
};

// Aggregates the requests of one concurrency level that ran for `duration_s`.
// `expected_output_tokens` (> 0) counts completed requests that produced fewer.
RunSummary summarize_run(const std::vector<RequestTiming>& requests, int concurrency,
                         double duration_s, int64_t expected_output_tokens);

}  // namespace vtllm::bench
