// Finds stop strings in streamed text, including ones split across chunks.
//
// push() returns the part of the text that can be shown: everything before
// the first stop string, or, while none has appeared, everything except a
// tail that could still grow into one (held back until it cannot). The first
// stop string is the one whose first occurrence ends earliest (what a stream
// can decide without looking ahead); at equal ends the longer one, then the
// one listed first. Chunks must be valid UTF-8 (IncrementalDetokenizer's are); what
// push() returns then is too.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vtllm::text {

class StopStringMatcher {
 public:
  // Empty strings in `stops` are ignored. With `include_stop`, the returned
  // text ends with the stop string itself.
  explicit StopStringMatcher(std::vector<std::string> stops, bool include_stop = false);

  struct Output {
    std::string text;                 // safe to emit now
    std::optional<size_t> stopped;    // index into `stops` once one matched
  };
  // Feeds the next chunk. After a stop has been reported, further input is ignored.
  Output push(std::string_view chunk);
  // End of generation without a stop: releases the held-back tail.
  std::string flush();

  bool stopped() const { return done_; }

 private:
  std::vector<std::string> stops_;
  bool include_stop_;
  std::string held_;
  bool done_ = false;
};

}  // namespace vtllm::text
