#include "bench/serve_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "base/error.h"

namespace vtllm::bench {

int64_t prompts_for_level(const ServeBenchConfig& config, int concurrency) {
  return config.num_prompts > 0 ? config.num_prompts : std::max<int64_t>(8, 4 * concurrency);
}

std::vector<RunSummary> run_serve_bench(const ServeBenchConfig& config,
                                        const std::function<void(const RunSummary&)>& on_level) {
  VT_REQUIRE(!config.concurrency.empty(), "--concurrency: no level given");
  for (int c : config.concurrency) VT_REQUIRE(c > 0, "--concurrency: level ", c, " is not positive");
  int64_t most = config.warmup;
  for (int c : config.concurrency) most = std::max(most, prompts_for_level(config, c));
  // One prompt list for every level: level k uses its first prompts_for_level(k).
  const std::vector<Prompt> prompts = make_prompts(config.workload, most);

  if (config.warmup > 0) {
    CompletionClient client(config.request);
    for (int64_t i = 0; i < config.warmup; ++i) {
      const RequestTiming t = client.run(prompts[size_t(i)]);
      VT_REQUIRE(t.ok, "warm-up request failed (is the server up at ", config.request.base_url,
               config.request.endpoint, "?): ", t.error);
    }
  }

  std::vector<RunSummary> out;
  for (int c : config.concurrency) {
    const int64_t n = prompts_for_level(config, c);
    std::vector<RequestTiming> timings(static_cast<size_t>(n));
    std::atomic<int64_t> next{0};
    std::vector<std::unique_ptr<CompletionClient>> clients;
    for (int w = 0; w < c; ++w)
      clients.push_back(std::make_unique<CompletionClient>(config.request));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int w = 0; w < c; ++w) {
      workers.emplace_back([&, w] {
        for (int64_t i = next++; i < n; i = next++)
          timings[size_t(i)] = clients[size_t(w)]->run(prompts[size_t(i)]);
      });
    }
    for (std::thread& t : workers) t.join();
    const double duration =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int64_t expected = config.request.ignore_eos ? config.request.max_tokens : 0;
    out.push_back(summarize_run(timings, c, duration, expected));
    if (on_level) on_level(out.back());
  }
  return out;
}

}  // namespace vtllm::bench
