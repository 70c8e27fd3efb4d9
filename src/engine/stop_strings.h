// Stop strings are matched on the detokenized output, as vLLM's output
// processor does (vllm/v1/engine/detokenizer.py); this is where the engine
// gets that text. The matching itself is text::StopStringMatcher.
//
// The engine does not own a tokenizer: it receives an IncrementalDetokenizer
// per request through a DetokenizerFactory (src/text's incremental
// detokenizer, wrapped, in production; a table in tests).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

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

}  // namespace vtllm::engine
