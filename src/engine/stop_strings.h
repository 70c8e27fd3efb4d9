// Stop strings: matched on the detokenized output, as vLLM's output
// processor does (vllm/v1/engine/detokenizer.py).
//
// The engine does not own a tokenizer: it receives an IncrementalDetokenizer
// per request through a DetokenizerFactory (src/text's incremental
// detokenizer, wrapped, in production; a table in tests).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vtllm::engine {

class IncrementalDetokenizer {
 public:
  virtual ~IncrementalDetokenizer() = default;
  // Appends one output token; returns the text it completes (possibly empty:
  // a partial UTF-8 sequence is held back until complete).
  virtual std::string add(int32_t token) = 0;
  // The request ended (eos, length, stop token): returns what add() still held
  // back, rendered as a whole decode would (an incomplete character becomes
  // U+FFFD, as HF decode does). Called at most once; add() is not called after.
  virtual std::string finish() = 0;
};

class DetokenizerFactory {
 public:
  virtual ~DetokenizerFactory() = default;
  // One detokenizer per request (per sample of n); `skip_special_tokens` is the
  // request's SamplingParams::skip_special_tokens.
  virtual std::unique_ptr<IncrementalDetokenizer> create(std::span<const int32_t> prompt,
                                                         bool skip_special_tokens) = 0;
};

// Accumulates output text, finds the earliest stop string, and releases text
// that can no longer be the start of one (stop strings spanning tokens work).
class StopStringMatcher {
 public:
  StopStringMatcher(std::vector<std::string> stops, bool include_stop_in_output);

  // Adds newly decoded text; returns the text now safe to emit. After a match,
  // matched() is set and the output ends at (or, when included, after) the stop.
  std::string add(const std::string& text);
  // Everything still held back (the request ended for another reason).
  std::string flush();

  const std::optional<std::string>& matched() const { return matched_; }
  const std::string& text() const { return text_; }  // the output so far, truncated at a match

 private:
  std::vector<std::string> stops_;
  bool include_;
  size_t hold_ = 0;  // longest stop length - 1: a suffix this long may begin a stop
  std::string text_;
  size_t emitted_ = 0;
  std::optional<std::string> matched_;
};

}  // namespace vtllm::engine
