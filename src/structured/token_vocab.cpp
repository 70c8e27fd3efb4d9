// TokenVocab: token byte strings and their depth-first trie.
#include "structured/token_vocab.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "text/byte_level.h"
#include "text/tokenizer.h"

namespace vtllm::structured {
namespace {

// A piece outside the byte-level alphabet (SentencePiece-style vocabularies):
// "<0xAB>" is that byte, U+2581 is a space.
std::string sentencepiece_bytes(std::string_view piece) {
  if (piece.size() == 6 && piece.substr(0, 3) == "<0x" && piece[5] == '>') {
    return std::string(1,
                       static_cast<char>(std::stoi(std::string(piece.substr(3, 2)), nullptr, 16)));
  }
  std::string out;
  constexpr std::string_view kSpaceMark = "\xE2\x96\x81";
  for (size_t i = 0; i < piece.size();) {
    if (piece.substr(i, 3) == kSpaceMark) {
      out += ' ';
      i += 3;
    } else {
      out += piece[i++];
    }
  }
  return out;
}

}  // namespace

TokenVocab::TokenVocab(std::vector<std::string> token_bytes, std::vector<TokenId> stop_ids)
    : bytes_(std::move(token_bytes)), stop_ids_(std::move(stop_ids)) {
  for (TokenId id : stop_ids_) {
    VT_CHECK(id >= 0 && static_cast<size_t>(id) < bytes_.size(), "token vocab: stop id ", id,
             " out of range [0, ", bytes_.size(), ")");
  }
  std::sort(stop_ids_.begin(), stop_ids_.end());
  stop_ids_.erase(std::unique(stop_ids_.begin(), stop_ids_.end()), stop_ids_.end());

  std::vector<TokenId> order;
  for (size_t i = 0; i < bytes_.size(); ++i) {
    VT_CHECK(bytes_[i].size() <= 65535, "token vocab: token ", i, " is longer than 65535 bytes");
    if (!bytes_[i].empty() && !is_stop(static_cast<TokenId>(i))) {
      order.push_back(static_cast<TokenId>(i));
    }
  }
  std::sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
    return bytes_[static_cast<size_t>(a)] < bytes_[static_cast<size_t>(b)];
  });
  std::vector<int32_t> path;  // trie nodes from depth 1 to the current one
  std::string_view prev;
  for (TokenId id : order) {
    const std::string_view s = bytes_[static_cast<size_t>(id)];
    size_t lcp = 0;
    while (lcp < s.size() && lcp < prev.size() && s[lcp] == prev[lcp]) ++lcp;
    while (path.size() > lcp) {
      trie_[static_cast<size_t>(path.back())].subtree_end = static_cast<int32_t>(trie_.size());
      path.pop_back();
    }
    for (size_t d = lcp; d < s.size(); ++d) {
      path.push_back(static_cast<int32_t>(trie_.size()));
      const auto t = static_cast<int32_t>(trie_tokens_.size());
      trie_.push_back(
          TrieNode{static_cast<uint8_t>(s[d]), 0, static_cast<uint16_t>(d + 1), -1, t, t});
    }
    max_token_bytes_ = std::max(max_token_bytes_, s.size());
    TrieNode& last = trie_[static_cast<size_t>(path.back())];
    if (last.token_begin == last.token_end)
      last.token_begin = static_cast<int32_t>(trie_tokens_.size());
    trie_tokens_.push_back(id);
    last.token_end = static_cast<int32_t>(trie_tokens_.size());
    prev = s;
  }
  for (int32_t n : path)
    trie_[static_cast<size_t>(n)].subtree_end = static_cast<int32_t>(trie_.size());
  // Node i's descendants are trie_[i + 1, subtree_end): a class holds them all when none
  // of them has a byte outside it (a prefix count per class).
  for (uint8_t k = 1; k <= kTextClasses; k <<= 1) {
    std::vector<int32_t> outside(trie_.size() + 1, 0);
    for (size_t i = 0; i < trie_.size(); ++i)
      outside[i + 1] = outside[i] + ((text_classes(trie_[i].byte) & k) ? 0 : 1);
    for (size_t i = 0; i < trie_.size(); ++i) {
      const auto end = static_cast<size_t>(trie_[i].subtree_end);
      if (outside[end] == outside[i + 1]) trie_[i].classes_below |= k;
    }
  }
}

bool TokenVocab::is_stop(TokenId id) const {
  return std::binary_search(stop_ids_.begin(), stop_ids_.end(), id);
}

TokenVocab TokenVocab::from_tokenizer(const text::Tokenizer& tokenizer, size_t vocab_size,
                                      std::vector<TokenId> stop_ids) {
  if (vocab_size == 0) vocab_size = tokenizer.id_end();
  if (stop_ids.empty()) {
    if (auto eos = tokenizer.eos_id()) stop_ids.push_back(*eos);
  }
  std::unordered_map<TokenId, const text::AddedToken*> added;
  for (const text::AddedToken& t : tokenizer.added_tokens()) added.emplace(t.id, &t);
  std::vector<std::string> bytes(vocab_size);
  const size_t n = std::min(vocab_size, tokenizer.id_end());
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TokenId>(i);
    if (const auto it = added.find(id); it != added.end()) {
      // Special tokens (control, media pads) never match text; the others (Qwen's
      // <tool_call>, <think>) are their content, as decode writes it.
      if (!it->second->special) bytes[i] = it->second->content;
      continue;
    }
    const std::optional<std::string> piece = tokenizer.id_to_token(id);
    if (!piece) continue;
    std::optional<std::string> b = text::byte_level_decode_token(*piece);
    bytes[i] = b ? std::move(*b) : sentencepiece_bytes(*piece);
  }
  return TokenVocab(std::move(bytes), std::move(stop_ids));
}

}  // namespace vtllm::structured
