// Added tokens (tokenizer.json "added_tokens"): matched in the text before
// pre-tokenization, as HF's AddedVocabulary does.
//
// Ids are assigned as HF's add_tokens assigns them: the vocabulary id when the
// content is already a model token, otherwise the next id after the model's.
// Matching is leftmost-longest over the raw text for tokens with
// normalized=false, and over each normalized remaining piece for tokens with
// normalized=true (whose content is normalized first); single_word, lstrip and
// rstrip then adjust or discard each match exactly as HF's find_matches.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/bpe.h"
#include "text/normalizer.h"

namespace vtllm::text {

struct AddedToken {
  std::string content;
  TokenId id = -1;  // as assigned (not necessarily the id written in the file)
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
};

// A piece of the input: an added token (id >= 0) or text still to tokenize (id == -1).
struct Segment {
  size_t start, end;
  TokenId id;
};

class AddedVocabulary {
 public:
  // `tokens` in file order (their ids are ignored and reassigned).
  AddedVocabulary(std::vector<AddedToken> tokens, const Bpe& model, const Normalizer* normalizer);
  ~AddedVocabulary();

  // Appends the segments of `text` (covering all of it, in order; none when
  // `text` is empty). `normalized` picks the normalized=true token set.
  void split(std::string_view text, bool normalized, std::vector<Segment>& out) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find_id(TokenId id) const;
  const AddedToken* find_content(std::string_view content) const;
  bool is_special_content(std::string_view content) const;
  bool empty() const { return tokens_.empty(); }

 private:
  class Trie;
  std::vector<AddedToken> tokens_;  // one per distinct content; later flags win
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<TokenId, size_t> by_id_;
  std::unordered_map<std::string, bool> special_content_;
  std::unique_ptr<Trie> raw_trie_, normalized_trie_;
};

}  // namespace vtllm::text
