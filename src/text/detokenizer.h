// Streaming detokenization: ids arrive one at a time, text leaves as soon as
// it is final.
//
// Contract: every chunk push() returns is valid UTF-8, and the chunks plus
// finish() concatenate to exactly tokenizer.decode(all ids pushed,
// skip_special_tokens). A token that ends inside a multi-byte character is
// held back until the character completes (or finish() renders it as U+FFFD,
// as decode() does).
//
// Method (as vLLM's and HF's DecodeStream): decode a short window of ids
// twice, without and with the new ids, and emit the difference once the
// window no longer ends in U+FFFD.
//
// This is the engine's detokenizer too: LlmEngine keeps one per request over
// the model's tokenizer, and its stop strings match on what push() returns.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace vtllm::text {

class IncrementalDetokenizer {
 public:
  // How many of the `context` ids (the last ones) start the decoding window.
  static constexpr size_t kContextIds = 6;

  // `tokenizer` must outlive this object. `context` are ids already shown
  // (typically the whole prompt); its last kContextIds start the decoding
  // window so the first output id gets its leading space right (as vLLM's
  // prefix offset does). They are never emitted.
  IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                         std::span<const TokenId> context = {});

  // Adds one id; returns the text that became final (often empty).
  std::string push(TokenId id);
  // Returns whatever is still held back; call once at the end.
  std::string finish();

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::vector<TokenId> ids_;
  size_t prefix_ = 0;  // window start
  size_t read_ = 0;    // end of the ids whose text has been emitted
};

}  // namespace vtllm::text
