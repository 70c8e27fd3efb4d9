// Finds stop strings in streamed text, including ones split across chunks, with
// the semantics of vLLM's check_stop_strings (vllm/v1/engine/detokenizer.py).
//
// Each push() is one step of new text (the engine pushes all the text a step
// produced at once). A stop matches in the push whose text completes it; when
// one push completes several, the one listed first wins, as vLLM does, and the
// output is cut before its first occurrence (after it with `include_stop`).
// Until a stop matches, push() returns everything except the longest tail
// that is a proper prefix of some stop (none with `include_stop`: nothing
// before a stop's end is ever cut). Chunks must be valid UTF-8
// (IncrementalDetokenizer's are); what push() and flush() return then is too.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vtllm::text {

class StopStringMatcher {
 public:
  // Throws on an empty stop string (it would match everywhere; vLLM rejects it too).
  explicit StopStringMatcher(std::vector<std::string> stops, bool include_stop = false);

  struct Output {
    std::string text;               // safe to emit now
    std::optional<size_t> stopped;  // index into `stops`, in the push that matched
  };
  // Feeds the next chunk. After a stop has matched, further input is ignored.
  Output push(std::string_view chunk);
  // End of generation without a stop: releases the held-back tail.
  std::string flush();

  // The stop string that matched, or null while none has.
  const std::string* matched() const { return matched_ ? &stops_[*matched_] : nullptr; }

 private:
  std::vector<std::string> stops_;
  bool include_stop_;
  size_t context_ = 0;  // longest stop - 1: how much emitted text a later match can start in
  std::string tail_;    // the end of the text: up to context_ emitted bytes, then the held ones
  size_t emitted_ = 0;  // bytes of tail_ already returned
  std::optional<size_t> matched_;
};

}  // namespace vtllm::text
