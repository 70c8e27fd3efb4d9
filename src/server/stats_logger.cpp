#include "server/stats_logger.h"

#include "base/error.h"

namespace vtllm::server {

StatsLogger::StatsLogger(const OpenAiService& service, std::chrono::milliseconds interval,
                         std::FILE* out)
    : service_(service), out_(out), last_(std::chrono::steady_clock::now()) {
  last_prompt_ = service_.server_metrics().prompt_tokens.value();
  last_generation_ = service_.server_metrics().generation_tokens.value();
  if (interval.count() <= 0) return;
  thread_ = std::thread([this, interval] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
      lock.unlock();
      if (const auto line = tick()) {
        std::fprintf(out_, "%s\n", line->c_str());
        std::fflush(out_);
      }
      lock.lock();
    }
  });
}

StatsLogger::~StatsLogger() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<std::string> StatsLogger::tick() {
  const auto now = std::chrono::steady_clock::now();
  const double prompt = service_.server_metrics().prompt_tokens.value();
  const double generation = service_.server_metrics().generation_tokens.value();
  const engine::SchedulerStats e = service_.engine_stats();
  const double dt = std::chrono::duration<double>(now - last_).count();
  const double dp = prompt - last_prompt_, dg = generation - last_generation_;
  last_ = now;
  last_prompt_ = prompt;
  last_generation_ = generation;
  if (dp == 0 && dg == 0 && e.num_running == 0 && e.num_waiting == 0) return std::nullopt;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "vtllm serve: avg prompt throughput %.1f tokens/s, avg generation throughput "
                "%.1f tokens/s, running %d reqs, waiting %d reqs, KV cache usage %.1f%%",
                dt > 0 ? dp / dt : 0.0, dt > 0 ? dg / dt : 0.0, e.num_running, e.num_waiting,
                100.0 * e.kv.usage);
  return std::string(buf);
}

}  // namespace vtllm::server
