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
          TrieNode{static_cast<uint8_t>(s[d]), 0, 0, static_cast<uint16_t>(d + 1), -1, t, 0, 0});
    }
    max_token_bytes_ = std::max(max_token_bytes_, s.size());
    // The path's last node is the newest (or a duplicate's, also the newest): its tokens end
    // the list so far.
    trie_tokens_.push_back(id);
    prev = s;
  }
  for (int32_t n : path)
    trie_[static_cast<size_t>(n)].subtree_end = static_cast<int32_t>(trie_.size());
  // Bottom-up: the positions (bits) from which a node's byte and every path below it stay
  // in the class, from its children's.
  std::vector<uint8_t> from(trie_.size()), below_at(trie_.size());
  class_tokens_.assign(kTextClasses * mask_words(), 0);
  class_tokens_up_to_.assign(kTextClasses * kShortMasks * mask_words(), 0);
  std::vector<int> run(max_token_bytes_ + 1);       // per depth: the position in a run, or -1
  std::vector<size_t> chars(max_token_bytes_ + 1);  // per depth: characters begun
  for (int c = 0; c < kTextClasses; ++c) {
    const auto cls = static_cast<uint8_t>(1 << c);
    for (size_t i = trie_.size(); i-- > 0;) {
      uint8_t below = 0xFF;
      const auto end = static_cast<size_t>(trie_[i].subtree_end);
      for (size_t j = i + 1; j < end; j = static_cast<size_t>(trie_[j].subtree_end)) {
        below &= from[j];
      }
      below_at[i] = below;
      uint8_t f = 0;
      for (int at = 0; at < kTextPositions; ++at) {
        const int next = text_step(cls, at, trie_[i].byte);
        if (next >= 0 && ((below >> next) & 1)) f |= static_cast<uint8_t>(1 << at);
      }
      from[i] = f;
      if (f & 1) trie_[i].text_from |= cls;
      if (below & 1) trie_[i].text_below |= cls;
    }
    // Top-down: the position after each node's path from the root.
    run[0] = 0;
    chars[0] = 0;
    uint32_t* mask = class_tokens_.data() + static_cast<size_t>(c) * mask_words();
    for (size_t i = 0; i < trie_.size(); ++i) {
      const size_t d = trie_[i].depth;
      const int at = run[d - 1] < 0 ? -1 : text_step(cls, run[d - 1], trie_[i].byte);
      run[d] = at;
      if (at < 0) continue;
      chars[d] = chars[d - 1] + (run[d - 1] == 0);
      if ((below_at[i] >> at) & 1) trie_[i].class_subtree |= cls;
      for (TokenId token : node_tokens(i)) {
        const auto id = static_cast<uint32_t>(token);
        mask[id >> 5] |= uint32_t{1} << (id & 31);
        if (chars[d] < kShortMasks) {  // up to `chars[d]` only; the longer counts below
          class_tokens_up_to_[(static_cast<size_t>(c) * kShortMasks + chars[d]) * mask_words() +
                              (id >> 5)] |= uint32_t{1} << (id & 31);
        }
      }
    }
    uint32_t* up_to =
        class_tokens_up_to_.data() + static_cast<size_t>(c) * kShortMasks * mask_words();
    for (size_t w = mask_words(); w < kShortMasks * mask_words(); ++w)
      up_to[w] |= up_to[w - mask_words()];
  }
  subtree_bytes_.resize(trie_.size());
  for (size_t i = trie_.size(); i-- > 0;) {
    uint16_t deepest = trie_[i].depth;
    ByteBuckets bytes{{0, 0}};
    const int b = bucket(trie_[i].byte);
    bytes.bits[b >> 6] |= uint64_t{1} << (b & 63);
    const auto end = static_cast<size_t>(trie_[i].subtree_end);
    for (size_t j = i + 1; j < end; j = static_cast<size_t>(trie_[j].subtree_end)) {
      deepest = std::max(deepest, trie_[j].subtree_depth);
      bytes.bits[0] |= subtree_bytes_[j].bits[0];
      bytes.bits[1] |= subtree_bytes_[j].bits[1];
    }
    trie_[i].subtree_depth = deepest;
    subtree_bytes_[i] = bytes;
  }
  by_length_ = trie_tokens_;
  std::stable_sort(by_length_.begin(), by_length_.end(),
                   [&](TokenId a, TokenId b) { return bytes(a).size() > bytes(b).size(); });
  longer_.assign(max_token_bytes_ + 1, 0);
  for (size_t len = 0, k = by_length_.size(); len <= max_token_bytes_; ++len) {
    while (k > 0 && bytes(by_length_[k - 1]).size() <= len) --k;
    longer_[len] = k;
  }
  short_masks_.assign(kShortMasks * mask_words(), 0);
  for (TokenId id : trie_tokens_) {
    for (size_t len = bytes(id).size(); len < kShortMasks; ++len) {
      short_masks_[len * mask_words() + static_cast<uint32_t>(id) / 32] |= uint32_t{1} << (id % 32);
    }
  }
  // Per byte set of tokens_within(): who holds it.
  matchable_.assign(mask_words(), 0);
  holding_lists_.assign(kHoldingSets, {});
  for (TokenId id : trie_tokens_) {
    matchable_[static_cast<uint32_t>(id) >> 5] |= uint32_t{1} << (static_cast<uint32_t>(id) & 31);
    std::bitset<kHoldingSets> held;
    for (char c : bytes(id)) held.set(std::min<size_t>(static_cast<uint8_t>(c), 128));
    for (size_t b = held._Find_first(); b < kHoldingSets; b = held._Find_next(b)) {
      holding_lists_[b].push_back(id);
    }
  }
  holding_mask_.assign(kHoldingSets, -1);
  for (size_t b = 0; b < kHoldingSets; ++b) {
    if (holding_lists_[b].size() <= kHoldingListMax) continue;
    holding_mask_[b] = static_cast<int32_t>(holding_masks_.size() / mask_words());
    holding_masks_.resize(holding_masks_.size() + mask_words(), 0);
    uint32_t* mask = holding_masks_.data() + holding_masks_.size() - mask_words();
    for (TokenId id : holding_lists_[b]) {
      mask[static_cast<uint32_t>(id) >> 5] |= uint32_t{1} << (static_cast<uint32_t>(id) & 31);
    }
    holding_lists_[b] = {};
  }
  text_tokens_.assign(kTextClasses * mask_words(), 0);
  for (size_t i = 0; i < trie_.size(); i = static_cast<size_t>(trie_[i].subtree_end)) {
    const size_t end = static_cast<size_t>(trie_[i].subtree_end);
    const size_t tokens_end =
        end < trie_.size() ? static_cast<size_t>(trie_[end].token_begin) : trie_tokens_.size();
    int32_t big = -1;
    if (tokens_end - static_cast<size_t>(trie_[i].token_begin) >= kBigFirst) {
      big = static_cast<int32_t>(first_class_tokens_.size() / (kTextClasses * mask_words()));
      first_class_tokens_.resize(first_class_tokens_.size() + kTextClasses * mask_words(), 0);
      for (int c = 0; c < kTextClasses; ++c) {
        const std::span<const uint32_t> in_class = class_tokens(c);
        uint32_t* mask =
            first_class_tokens_.data() +
            (static_cast<size_t>(big) * kTextClasses + static_cast<size_t>(c)) * mask_words();
        for (size_t k = static_cast<size_t>(trie_[i].token_begin); k < tokens_end; ++k) {
          const auto id = static_cast<uint32_t>(trie_tokens_[k]);
          mask[id >> 5] |= in_class[id >> 5] & (uint32_t{1} << (id & 31));
        }
      }
    }
    first_level_.push_back(FirstNode{i, trie_[i].byte, trie_[i].text_from, big});
    for (int c = 0; c < kTextClasses; ++c) {
      if (!((trie_[i].text_from >> c) & 1)) continue;
      uint32_t* mask = text_tokens_.data() + static_cast<size_t>(c) * mask_words();
      for (size_t k = static_cast<size_t>(trie_[i].token_begin); k < tokens_end; ++k) {
        const auto id = static_cast<uint32_t>(trie_tokens_[k]);
        mask[id >> 5] |= uint32_t{1} << (id & 31);
      }
    }
  }
}

int TokenVocab::text_step(uint8_t cls, int at, uint8_t byte) {
  // Inside a character: 1-3 continuation bytes due; 4: after E0 (A0-BF, then 1); 5: after
  // ED (80-9F: no surrogates); 6: after F0 (90-BF, then 2); 7: after F4 (80-8F, then 2).
  const bool cont = byte >= 0x80 && byte <= 0xBF;
  switch (at) {
    case 1:
    case 2:
    case 3:
      return cont ? at - 1 : -1;
    case 4:
      return byte >= 0xA0 && byte <= 0xBF ? 1 : -1;
    case 5:
      return byte >= 0x80 && byte <= 0x9F ? 1 : -1;
    case 6:
      return byte >= 0x90 && byte <= 0xBF ? 2 : -1;
    case 7:
      return byte >= 0x80 && byte <= 0x8F ? 2 : -1;
    default:
      break;
  }
  if (byte < 0x80) {
    const bool printable = byte >= 0x20 && byte < 0x7F;
    const bool in = (cls & (kJsonUtf8 | kJsonText)) ? printable && byte != '"' && byte != '\\'
                                                    : (printable && byte != '<') || byte == '\t';
    return in ? 0 : -1;
  }
  if (!(cls & (kJsonUtf8 | kMarkupUtf8))) return -1;
  if (byte >= 0xC2 && byte <= 0xDF) return 1;
  if (byte == 0xE0) return 4;
  if (byte == 0xED) return 5;
  if (byte >= 0xE1 && byte <= 0xEF) return 2;
  if (byte == 0xF0) return 6;
  if (byte >= 0xF1 && byte <= 0xF3) return 3;
  if (byte == 0xF4) return 7;
  return -1;
}

bool TokenVocab::tokens_within(const std::bitset<256>& bytes, std::span<uint32_t> out) const {
  const size_t high = (bytes >> 128).count();
  if (high != 0 && high != 128) return false;
  // A small set (digits, whitespace) leaves out most of the masks: its trie walk is short.
  size_t masks = 0;
  for (size_t b = 0; b < kHoldingSets; ++b) {
    masks += !(b < 128 ? bytes[b] : high != 0) && holding_mask_[b] >= 0;
  }
  if (masks > kMaxHoldingMasks) return false;
  std::copy(matchable_.begin(), matchable_.end(), out.begin());
  for (size_t b = 0; b < kHoldingSets; ++b) {
    if (b < 128 ? bytes[b] : high != 0) continue;
    if (holding_mask_[b] >= 0) {
      const uint32_t* mask =
          holding_masks_.data() + static_cast<size_t>(holding_mask_[b]) * mask_words();
      for (size_t w = 0; w < mask_words(); ++w) out[w] &= ~mask[w];
    } else {
      for (TokenId id : holding_lists_[b]) {
        out[static_cast<uint32_t>(id) >> 5] &= ~(uint32_t{1} << (static_cast<uint32_t>(id) & 31));
      }
    }
  }
  return true;
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
