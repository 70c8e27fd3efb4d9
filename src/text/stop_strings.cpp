#include "text/stop_strings.h"

#include <algorithm>

#include "base/error.h"

namespace vtllm::text {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops, bool include_stop)
    : stops_(std::move(stops)), include_stop_(include_stop) {
  for (const std::string& s : stops_) {
    VT_CHECK(!s.empty(), "stop strings: an empty stop string");
    context_ = std::max(context_, s.size() - 1);
  }
}

StopStringMatcher::Output StopStringMatcher::push(std::string_view chunk) {
  Output out;
  if (matched_ || chunk.empty()) return out;
  const size_t old_len = tail_.size();
  tail_.append(chunk);
  // vLLM's check_stop_strings: the first listed stop with an occurrence that
  // ends in the new text (earlier text held none), cut at that occurrence.
  for (size_t k = 0; k < stops_.size(); ++k) {
    const std::string& s = stops_[k];
    const size_t at = tail_.find(s, old_len >= s.size() - 1 ? old_len - (s.size() - 1) : 0);
    if (at == std::string::npos) continue;
    matched_ = out.stopped = k;
    // At or past emitted_: what was emitted was no prefix of a stop (or, with
    // include_stop, ends before the new text).
    const size_t end = at + (include_stop_ ? s.size() : 0);
    out.text = tail_.substr(emitted_, end - emitted_);
    tail_.clear();
    emitted_ = 0;
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop.
  size_t keep = 0;
  if (!include_stop_) {
    for (const std::string& s : stops_) {
      for (size_t len = std::min(s.size() - 1, tail_.size()); len > keep; --len) {
        if (tail_.compare(tail_.size() - len, len, s, 0, len) == 0) {
          keep = len;
          break;
        }
      }
    }
  }
  const size_t safe = std::max(emitted_, tail_.size() - keep);
  out.text = tail_.substr(emitted_, safe - emitted_);
  emitted_ = safe;
  // Only the last context_ bytes of emitted text can be part of a later match.
  if (tail_.size() > context_) {
    const size_t drop = std::min(emitted_, tail_.size() - context_);
    tail_.erase(0, drop);
    emitted_ -= drop;
  }
  return out;
}

std::string StopStringMatcher::flush() {
  std::string out;
  if (!matched_) out = tail_.substr(emitted_);
  tail_.clear();
  emitted_ = 0;
  return out;
}

}  // namespace vtllm::text
