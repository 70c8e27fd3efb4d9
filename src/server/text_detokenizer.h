// The engine's per-request detokenizer (engine::DetokenizerFactory) over
// src/text's IncrementalDetokenizer, so stop strings and streamed text come
// from the model's own tokenizer.
#pragma once

#include <memory>
#include <span>

#include "engine/stop_strings.h"
#include "text/tokenizer.h"

namespace vtllm::server {

class TextDetokenizerFactory : public engine::DetokenizerFactory {
 public:
  // `tokenizer` must outlive the factory and every detokenizer it creates.
  explicit TextDetokenizerFactory(const text::Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  std::unique_ptr<engine::IncrementalDetokenizer> create(std::span<const int32_t> prompt,
                                                         bool skip_special_tokens) override;

 private:
  const text::Tokenizer& tokenizer_;
};

}  // namespace vtllm::server
