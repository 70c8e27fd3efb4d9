// Post-processors of HF tokenizer.json ("post_processor" field): what
// add_special_tokens adds around an encoded sequence. Supported types:
// TemplateProcessing (single sequence), ByteLevel (changes only offsets, so
// no ids), Sequence. Any other type is a load error naming it.
#pragma once

#include <memory>
#include <vector>

#include "base/json.h"
#include "text/bpe.h"

namespace vtllm::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites the ids of one encoded sequence; only called with add_special_tokens.
  virtual void process(std::vector<TokenId>& ids) const = 0;
};

std::unique_ptr<PostProcessor> make_post_processor(const Json& j, const JsonPath& at,
                                                   int depth = 0);

}  // namespace vtllm::text
