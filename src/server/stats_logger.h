// The periodic throughput line of a running server (vLLM's LoggingStatLogger):
//   vtllm serve: avg prompt throughput 812.4 tokens/s, avg generation throughput
//   233.1 tokens/s, running 8 reqs, waiting 0 reqs, KV cache usage 12.5%
// every `interval` on stderr while the server has work (tokens in the interval, or
// requests running or waiting); an idle server prints nothing. Thread-safe: a thread of
// its own reads the service's counters and the engine's gauges.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "server/openai_service.h"

namespace vtllm::server {

class StatsLogger {
 public:
  // `service` must outlive the logger. interval <= 0: no thread (tick() by hand).
  StatsLogger(const OpenAiService& service, std::chrono::milliseconds interval,
              std::FILE* out = stderr);
  ~StatsLogger();

  // The line for the time since the previous tick (or construction); nullopt when
  // the server was idle throughout.
  std::optional<std::string> tick();

 private:
  const OpenAiService& service_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point last_;
  double last_prompt_ = 0, last_generation_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace vtllm::server
