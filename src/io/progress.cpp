#include "io/progress.h"

#include <unistd.h>

#include <cstdio>

namespace vtllm::io {

bool ProgressBar::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(std::string label, uint64_t total_bytes, bool enabled)
    : label_(std::move(label)), total_(total_bytes), enabled_(enabled) {}

ProgressBar::ProgressBar(std::string label, uint64_t total_bytes)
    : ProgressBar(std::move(label), total_bytes, stderr_is_terminal()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(uint64_t done) {
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  draw(done);
}

void ProgressBar::draw(uint64_t done) {
  constexpr int kWidth = 30;
  const double frac = total_ ? double(done) / double(total_) : 1.0;
  const int filled = int(frac * kWidth + 0.5);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
  bar[kWidth] = '\0';
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::fprintf(stderr, "\r%s [%s] %5.1f%% %.2f/%.2f GiB", label_.c_str(), bar, frac * 100.0,
               double(done) / kGiB, double(total_) / kGiB);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  draw(total_);
  std::fputc('\n', stderr);
  finished_ = true;
}

}  // namespace vtllm::io
