#include "engine/stop_strings.h"

#include <algorithm>

#include "base/error.h"

namespace vtllm::engine {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops, bool include_stop_in_output)
    : stops_(std::move(stops)), include_(include_stop_in_output) {
  for (const std::string& s : stops_) {
    VT_CHECK(!s.empty(), "stop strings: an empty stop string");
    hold_ = std::max(hold_, s.size() - 1);
  }
}

std::string StopStringMatcher::add(const std::string& text) {
  if (matched_) return {};
  const size_t old_len = text_.size();
  text_ += text;
  // Earliest match that involves new text (older text was searched before).
  size_t best = std::string::npos;
  const std::string* best_stop = nullptr;
  for (const std::string& s : stops_) {
    const size_t from = old_len >= s.size() - 1 ? old_len - (s.size() - 1) : 0;
    const size_t at = text_.find(s, from);
    if (at != std::string::npos && (at < best || (at == best && s.size() > best_stop->size()))) {
      best = at;
      best_stop = &s;
    }
  }
  if (best_stop) {
    matched_ = *best_stop;
    text_.resize(best + (include_ ? best_stop->size() : 0));
    std::string out = emitted_ < text_.size() ? text_.substr(emitted_) : std::string();
    emitted_ = text_.size();
    return out;
  }
  const size_t safe = text_.size() > hold_ ? text_.size() - hold_ : 0;
  if (safe <= emitted_) return {};
  std::string out = text_.substr(emitted_, safe - emitted_);
  emitted_ = safe;
  return out;
}

std::string StopStringMatcher::flush() {
  std::string out = emitted_ < text_.size() ? text_.substr(emitted_) : std::string();
  emitted_ = text_.size();
  return out;
}

}  // namespace vtllm::engine
