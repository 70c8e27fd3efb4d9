// A one-line progress bar on stderr, drawn only when stderr is a terminal.
//
// update() redraws at most every 100 ms (and always at 100 %); finish() ends the
// line. Not thread-safe: one loader thread drives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace vtllm::io {

class ProgressBar {
 public:
  // `enabled` false: every call is a no-op. Default: whether stderr is a terminal.
  ProgressBar(std::string label, uint64_t total_bytes, bool enabled);
  explicit ProgressBar(std::string label, uint64_t total_bytes);
  ~ProgressBar();

  void update(uint64_t done_bytes);
  void finish();

  static bool stderr_is_terminal();

 private:
  void draw(uint64_t done_bytes);

  std::string label_;
  uint64_t total_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace vtllm::io
