// Normalizers of HF tokenizer.json ("normalizer" field): they rewrite a piece
// of text before pre-tokenization. Supported types: NFC, NFD, NFKC, NFKD
// (utf8proc), Sequence, Replace (String or Regex pattern), Prepend, Lowercase,
// Strip. Any other type is a load error naming it.
//
// Offsets into the original text are not tracked (vtllm never returns them).
#pragma once

#include <memory>
#include <string>

#include "base/json.h"

namespace vtllm::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites `s` (valid UTF-8) in place.
  virtual void normalize(std::string& s) const = 0;
};

// Builds the normalizer described by `j` (the JSON object at `at`). `depth`
// bounds nesting of Sequence.
std::unique_ptr<Normalizer> make_normalizer(const Json& j, const JsonPath& at, int depth = 0);

}  // namespace vtllm::text
