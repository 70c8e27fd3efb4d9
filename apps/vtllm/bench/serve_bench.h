// `vtllm bench serve`: a closed-loop concurrency sweep against an OpenAI server.
//
// For each concurrency C, C client threads share one queue of prompts; each sends
// its next request as soon as its previous one has finished (closed loop), so C
// requests are in flight until the queue drains. The level's duration runs from the
// first send to the last completion. Warm-up requests (not measured) go first, once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/openai_client.h"
#include "bench/stats.h"
#include "bench/workload.h"

namespace vtllm::bench {

struct ServeBenchConfig {
  CompletionParams request;
  WorkloadConfig workload;
  std::vector<int> concurrency = {1};
  int64_t num_prompts = 0;  // per level; 0: max(8, 4 x concurrency)
  int64_t warmup = 1;       // requests sent one at a time before the first level
};

int64_t prompts_for_level(const ServeBenchConfig& config, int concurrency);

// Runs every level in order; `on_level` (may be empty) sees each summary as it completes.
std::vector<RunSummary> run_serve_bench(const ServeBenchConfig& config,
                                        const std::function<void(const RunSummary&)>& on_level);

}  // namespace vtllm::bench
