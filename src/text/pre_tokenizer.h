// Pre-tokenizers of HF tokenizer.json ("pre_tokenizer" field): they cut a
// normalized piece into the words the model sees. Supported types: Split
// (String or Regex pattern, all five behaviors, invert), ByteLevel
// (add_prefix_space, use_regex with GPT-2's pattern) and Sequence. Any other
// type is a load error naming it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/json.h"

namespace vtllm::text {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their sub-pieces, in order; empty pieces are dropped.
  // Thread-safe (const, no shared mutable state).
  virtual void pre_tokenize(std::vector<std::string>& pieces) const = 0;
};

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& j, const JsonPath& at,
                                                 int depth = 0);

}  // namespace vtllm::text
