// The BPE model of HF tokenizer.json ("model": {"type": "BPE"}): vocabulary,
// merge ranks, ignore_merges, byte_fallback, unk_token (+ fuse_unk),
// continuing_subword_prefix and end_of_word_suffix.
//
// tokenize() follows HF's BPE::tokenize exactly: each character becomes its
// vocabulary id (or byte tokens "<0xAB>", or unk, or nothing), then pairs
// merge lowest rank first, leftmost first, through a priority queue with the
// same stale-entry rule as HF's Word::merge_all.
//
// Thread-safety: tokenize() is const and may run concurrently; the word cache
// is sharded behind mutexes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"

namespace vtllm::text {

using TokenId = int32_t;

class Bpe {
 public:
  // Validates everything a hostile file could get wrong: types, ids out of
  // range or repeated, merges naming tokens not in the vocabulary, dropout.
  Bpe(const Json& model, const JsonPath& at);
  ~Bpe();
  Bpe(const Bpe&) = delete;
  Bpe& operator=(const Bpe&) = delete;

  // Appends the ids of `word` (one pre-tokenized piece) to `out`.
  void tokenize(std::string_view word, std::vector<TokenId>& out) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  // nullptr when `id` names no vocabulary entry.
  const std::string* id_to_token(TokenId id) const;
  // Number of vocabulary entries (HF's get_vocab_size()).
  size_t size() const;
  // One past the largest id.
  size_t id_end() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vtllm::text
