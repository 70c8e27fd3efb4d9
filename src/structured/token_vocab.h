// The vocabulary as byte strings, for matching tokens against a grammar.
#pragma once

#include <bitset>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vtllm::text {
class Tokenizer;
}

namespace vtllm::structured {

using TokenId = int32_t;

// Immutable after construction; thread-safe to share.
//
// Each id in [0, size()) has a byte string (empty when the id may never be
// produced under a grammar: unused ids, special tokens, empty tokens)
// or is a stop token (EOS: allowed exactly when the grammar can end). The
// matchable tokens are also laid out as a byte trie in depth-first order so
// a mask walks each shared prefix once.
class TokenVocab {
 public:
  // One trie node: the byte on the edge into it, the text classes (text_step) that hold
  // it followed by any path below it (text_from) and that hold every path below it
  // (text_below), both read from a character boundary, its depth (1 = first byte), the
  // end of its subtree (index one past its last descendant), and where its tokens start in
  // trie_tokens(): those whose bytes end here (node_tokens()), then its subtree's.
  struct TrieNode {
    uint8_t byte;
    // A mask walk in a state that lives through every string of one of these classes
    // takes the whole subtree: from the state before the node (text_from) or after it.
    uint8_t text_from : 4;
    uint8_t text_below : 4;
    uint16_t depth;
    int32_t subtree_end;
    int32_t token_begin;
    // Read at every node of a walk, so kept with it: subtree_depth(), class_subtree().
    uint16_t subtree_depth;
    uint8_t class_subtree;
  };

  // `token_bytes[i]` is token i's bytes ("" = never allowed); `stop_ids` are
  // the EOS ids (each < token_bytes.size()). Throws vtllm::Error on a stop id
  // out of range or a token longer than 65535 bytes.
  TokenVocab(std::vector<std::string> token_bytes, std::vector<TokenId> stop_ids);

  // From a tokenizer: each model token decoded from its byte-level spelling
  // (a piece outside that alphabet is read SentencePiece-style: "<0xAB>" is
  // the byte, U+2581 a space, the rest as is); an added token that is not
  // special (Qwen's <tool_call>, </think>) is its content, so a grammar's
  // "<tool_call>" can be that one token; special ones are excluded but
  // `stop_ids`. `vocab_size` (0: tokenizer.id_end())
  // is the mask width, usually the model's lm_head rows (ids past the
  // tokenizer's are never allowed). Empty `stop_ids`: the tokenizer's eos_id().
  static TokenVocab from_tokenizer(const text::Tokenizer& tokenizer, size_t vocab_size = 0,
                                   std::vector<TokenId> stop_ids = {});

  // Number of ids (the mask covers ids [0, size())).
  size_t size() const { return bytes_.size(); }
  // Words a bitmask needs: ceil(size() / 32).
  size_t mask_words() const { return (bytes_.size() + 31) / 32; }
  std::string_view bytes(TokenId id) const { return bytes_[static_cast<size_t>(id)]; }
  bool is_stop(TokenId id) const;
  // Length of the longest matchable token (the trie's depth).
  size_t max_token_bytes() const { return max_token_bytes_; }
  std::span<const TokenId> stop_ids() const { return stop_ids_; }
  std::span<const TrieNode> trie() const { return trie_; }
  std::span<const TokenId> trie_tokens() const { return trie_tokens_; }
  // The tokens whose bytes end at trie node `node`: up to the next node's first.
  std::span<const TokenId> node_tokens(size_t node) const {
    const size_t end = node + 1 < trie_.size() ? static_cast<size_t>(trie_[node + 1].token_begin)
                                               : trie_tokens_.size();
    return std::span(trie_tokens_)
        .subspan(static_cast<size_t>(trie_[node].token_begin),
                 end - static_cast<size_t>(trie_[node].token_begin));
  }
  // The depth-1 trie nodes, in trie order, copied together (a scan over them in the trie
  // itself touches a cache line each).
  struct FirstNode {
    size_t node;
    uint8_t byte, text_from;
    int32_t big;  // index of its first_class_tokens(), or -1
  };
  std::span<const FirstNode> first_level() const { return first_level_; }
  // A depth-1 node with at least kBigFirst tokens below it (a space begins a third of the
  // vocabulary) has, per class (bit index), the mask of its tokens that are class strings:
  // a walk whose state after the node's byte lives through the class takes them at once.
  static constexpr size_t kBigFirst = 4096;
  std::span<const uint32_t> first_class_tokens(int32_t big, int cls) const {
    return std::span(first_class_tokens_)
        .subspan(
            (static_cast<size_t>(big) * kTextClasses + static_cast<size_t>(cls)) * mask_words(),
            mask_words());
  }
  // Classes of running text, each a bit; a class holds a byte string when it is the start
  // of a run of the class's characters in UTF-8 (it may stop inside a character).
  // kJsonText: printable ASCII but '"' and '\\' (what a JSON string holds raw);
  // kMarkupText: printable ASCII but '<', plus tab (an XML tool call's raw value, whose
  // closing tag starts with a newline); kJsonUtf8 / kMarkupUtf8: the same plus every code
  // point past ASCII (surrogates excluded), which is what those grammars allow there.
  static constexpr uint8_t kJsonUtf8 = 1, kMarkupUtf8 = 2, kJsonText = 4, kMarkupText = 8;
  static constexpr int kTextClasses = 4;
  // Positions inside a run: 0 between characters, 1..7 inside a multi-byte one.
  static constexpr int kTextPositions = 8;
  // The position after `byte` from position `at` (0 <= at < kTextPositions) in a run of
  // class `cls` (one bit), or -1 when no string of the class goes on with it.
  static int text_step(uint8_t cls, int at, uint8_t byte);
  // Per class (bit index < kTextClasses): the bitmask (mask_words() words) of the tokens
  // under the depth-1 trie nodes whose text_from holds the class, which a walk whose
  // root state lives through the class takes at once.
  std::span<const uint32_t> text_tokens(int cls) const {
    return std::span(text_tokens_).subspan(static_cast<size_t>(cls) * mask_words(), mask_words());
  }
  // Per class (bit index): the tokens whose bytes, read from a character boundary, are a
  // string of the class (a walk whose root state lives through the class allows them all),
  // and per trie node the classes for which that holds of every token in its subtree.
  std::span<const uint32_t> class_tokens(int cls) const {
    return std::span(class_tokens_).subspan(static_cast<size_t>(cls) * mask_words(), mask_words());
  }
  uint8_t class_subtree(size_t node) const { return trie_[node].class_subtree; }
  // The class_tokens() of at most `chars` characters (< kShortMasks; one cut short counts):
  // what a state that lives through exactly the class's strings that short allows of them.
  std::span<const uint32_t> class_tokens_up_to(int cls, size_t chars) const {
    return std::span(class_tokens_up_to_)
        .subspan((static_cast<size_t>(cls) * kShortMasks + chars) * mask_words(), mask_words());
  }
  // A set of bytes coarsened to 128 buckets: bytes 1-126 one each, NUL and DEL one (both
  // rare in tokens), the bytes past ASCII one.
  struct ByteBuckets {
    uint64_t bits[2];  // bit b % 64 of word b / 64: bucket b
  };
  static int bucket(uint8_t byte) { return byte == 0x7F ? 0 : byte < 0x80 ? byte : 127; }
  // The buckets of the bytes on trie node `node`'s edge and on every path below it: a walk in
  // a state that every one of them leads back to takes the whole subtree.
  const ByteBuckets& subtree_bytes(size_t node) const { return subtree_bytes_[node]; }
  // The depth of the deepest node in trie node `node`'s subtree (the longest token there).
  size_t subtree_depth(size_t node) const { return trie_[node].subtree_depth; }
  // The matchable tokens longer than `len` bytes (longest first).
  std::span<const TokenId> tokens_longer_than(size_t len) const {
    return std::span(by_length_).first(len < longer_.size() ? longer_[len] : 0);
  }
  // Lengths below this have a bitmask (mask_words() words) of the tokens no longer than them:
  // most tokens are longer than a few bytes, too many to clear one by one.
  static constexpr size_t kShortMasks = 16;
  std::span<const uint32_t> tokens_up_to(size_t len) const {
    return std::span(short_masks_).subspan(len * mask_words(), mask_words());
  }
  // Writes into `out` (mask_words() words) the matchable tokens whose every byte is in `bytes`,
  // by one mask per ASCII byte or for all bytes past ASCII (a list of the tokens instead for
  // the rare ones); false, `out` untouched, when `bytes` holds some bytes past ASCII but not
  // all, or leaves out so many common bytes that a walk of the trie is cheaper (the caller
  // walks it instead).
  bool tokens_within(const std::bitset<256>& bytes, std::span<uint32_t> out) const;

 private:
  std::vector<std::string> bytes_;
  std::vector<TokenId> stop_ids_;
  std::vector<TrieNode> trie_;
  std::vector<TokenId> trie_tokens_;
  std::vector<FirstNode> first_level_;
  std::vector<uint32_t> first_class_tokens_;  // per big first node: kTextClasses masks
  size_t max_token_bytes_ = 0;
  std::vector<uint32_t> text_tokens_;         // kTextClasses masks
  std::vector<ByteBuckets> subtree_bytes_;    // per trie node
  std::vector<uint32_t> class_tokens_;        // kTextClasses masks
  std::vector<uint32_t> class_tokens_up_to_;  // kTextClasses x kShortMasks masks
  std::vector<TokenId> by_length_;            // trie tokens, longest first
  std::vector<size_t> longer_;                // per length: how many of by_length_ are longer
  std::vector<uint32_t> short_masks_;         // kShortMasks masks (tokens_up_to)
  // tokens_within(): per ASCII byte, then one for every byte past ASCII, the tokens holding
  // it, as a mask (index into holding_masks_) or, when few, a list.
  static constexpr size_t kHoldingSets = 129;
  static constexpr size_t kHoldingListMax = 1024;  // a mask reads 19 KiB: ~1k bits set by hand
  static constexpr size_t kMaxHoldingMasks = 16;   // past this many, the trie walk is cheaper
  std::vector<uint32_t> matchable_;                // every trie token
  std::vector<int32_t> holding_mask_;              // per set: its mask's index, or -1
  std::vector<uint32_t> holding_masks_;
  std::vector<std::vector<TokenId>> holding_lists_;  // per set without a mask
};

}  // namespace vtllm::structured
