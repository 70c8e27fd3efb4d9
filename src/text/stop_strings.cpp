#include "text/stop_strings.h"

#include <algorithm>

namespace vtllm::text {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops, bool include_stop)
    : include_stop_(include_stop) {
  for (std::string& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

StopStringMatcher::Output StopStringMatcher::push(std::string_view chunk) {
  Output out;
  if (done_) return out;
  held_.append(chunk);
  // The stop that ends first (what a stream can decide without looking ahead);
  // at equal ends the longer one, then the one listed first.
  size_t best_pos = std::string::npos, best_end = std::string::npos, best = 0;
  for (size_t k = 0; k < stops_.size(); ++k) {
    const size_t pos = held_.find(stops_[k]);
    if (pos == std::string::npos) continue;
    const size_t end = pos + stops_[k].size();
    if (end < best_end || (end == best_end && pos < best_pos)) {
      best_pos = pos;
      best_end = end;
      best = k;
    }
  }
  if (best_pos != std::string::npos) {
    done_ = true;
    out.stopped = best;
    out.text = held_.substr(0, best_pos + (include_stop_ ? stops_[best].size() : 0));
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const std::string& s : stops_) {
    for (size_t len = std::min(s.size() - 1, held_.size()); len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  out.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStringMatcher::flush() {
  std::string out;
  if (!done_) out.swap(held_);
  held_.clear();
  return out;
}

}  // namespace vtllm::text
