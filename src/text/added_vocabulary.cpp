#include "text/added_vocabulary.h"

#include <algorithm>
#include <array>

#include "base/error.h"
#include "text/utf8.h"

namespace vtllm::text {

// Byte trie answering "longest pattern starting at i" (leftmost-longest scan).
class AddedVocabulary::Trie {
 public:
  // Adds `pattern` for the added token `token`; the first pattern added wins a tie.
  void add(std::string_view pattern, size_t token) {
    if (pattern.empty()) return;
    int32_t node = 0;
    for (unsigned char c : pattern) {
      auto& edges = nodes_[node].edges;
      auto it = std::lower_bound(edges.begin(), edges.end(), c,
                                 [](const auto& e, unsigned char k) { return e.first < k; });
      if (it != edges.end() && it->first == c) {
        node = it->second;
      } else {
        const int32_t child = static_cast<int32_t>(nodes_.size());
        edges.insert(it, {c, child});
        nodes_.emplace_back();
        node = child;
      }
    }
    if (nodes_[node].token < 0) nodes_[node].token = static_cast<int64_t>(token);
    first_byte_[static_cast<unsigned char>(pattern[0])] = true;
  }

  bool empty() const { return nodes_.size() == 1; }

  // The longest match starting at i: (token, end) or token -1.
  std::pair<int64_t, size_t> longest_at(std::string_view s, size_t i) const {
    int64_t best = -1;
    size_t best_end = i;
    if (!first_byte_[static_cast<unsigned char>(s[i])]) return {best, best_end};
    int32_t node = 0;
    for (size_t k = i; k < s.size(); ++k) {
      const auto& edges = nodes_[node].edges;
      const unsigned char c = static_cast<unsigned char>(s[k]);
      auto it = std::lower_bound(edges.begin(), edges.end(), c,
                                 [](const auto& e, unsigned char key) { return e.first < key; });
      if (it == edges.end() || it->first != c) break;
      node = it->second;
      if (nodes_[node].token >= 0) {
        best = nodes_[node].token;
        best_end = k + 1;
      }
    }
    return {best, best_end};
  }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> edges;
    int64_t token = -1;
  };
  std::vector<Node> nodes_{Node{}};
  std::array<bool, 256> first_byte_{};
};

namespace {

bool ends_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t k = s.size() - 1;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  size_t len = 0;
  return is_word_char(utf8_decode(s, k, &len));
}

bool starts_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t len = 0;
  return is_word_char(utf8_decode(s, 0, &len));
}

// Start of the run of white space that ends `s` (s.size() when there is none).
size_t trailing_space_start(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t k = end - 1;
    while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
    size_t len = 0;
    if (!is_white_space(utf8_decode(s, k, &len))) break;
    end = k;
  }
  return end;
}

size_t leading_space_len(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 0;
    if (!is_white_space(utf8_decode(s, i, &len))) break;
    i += len;
  }
  return i;
}

}  // namespace

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Bpe& model,
                                 const Normalizer* normalizer)
    : raw_trie_(std::make_unique<Trie>()), normalized_trie_(std::make_unique<Trie>()) {
  TokenId next_id = static_cast<TokenId>(model.size());
  std::vector<size_t> specials, classics;  // HF's two lists, in the order first seen
  for (AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    if (t.special) special_content_.emplace(t.content, true);
    auto found = by_content_.find(t.content);
    if (found != by_content_.end()) {
      // HF re-adds a token whose flags differ under the same id; the new flags win.
      const TokenId id = tokens_[found->second].id;
      tokens_[found->second] = t;
      tokens_[found->second].id = id;
      continue;
    }
    if (auto mid = model.token_to_id(t.content)) {
      t.id = *mid;
    } else {
      t.id = next_id++;
    }
    const size_t index = tokens_.size();
    by_content_.emplace(t.content, index);
    by_id_[t.id] = index;
    (special_content_.count(t.content) ? specials : classics).push_back(index);
    tokens_.push_back(std::move(t));
  }
  for (const std::vector<size_t>* list : {&specials, &classics}) {
    for (size_t index : *list) {
      const AddedToken& t = tokens_[index];
      if (!t.normalized) {
        raw_trie_->add(t.content, index);
      } else {
        std::string content = t.content;
        if (normalizer) normalizer->normalize(content);
        normalized_trie_->add(content, index);
      }
    }
  }
}

AddedVocabulary::~AddedVocabulary() = default;

const AddedToken* AddedVocabulary::find_id(TokenId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocabulary::find_content(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

bool AddedVocabulary::is_special_content(std::string_view content) const {
  return special_content_.count(std::string(content)) != 0;
}

void AddedVocabulary::split(std::string_view s, bool normalized, std::vector<Segment>& out) const {
  if (s.empty()) return;
  const Trie& trie = normalized ? *normalized_trie_ : *raw_trie_;
  if (trie.empty()) {
    out.push_back({0, s.size(), -1});
    return;
  }
  size_t start_offset = 0;
  size_t i = 0;
  while (i < s.size()) {
    const auto [index, match_end] = trie.longest_at(s, i);
    if (index < 0) {
      ++i;
      continue;
    }
    size_t start = i, stop = match_end;
    i = match_end;  // the scan resumes after the match, kept or not
    const AddedToken& t = tokens_[by_id_.at(tokens_[index].id)];
    if (t.single_word) {
      const bool start_space = start == 0 || !ends_with_word(s.substr(0, start));
      const bool stop_space = stop == s.size() || !starts_with_word(s.substr(stop));
      if (!start_space || !stop_space) continue;
    }
    if (t.lstrip) start = std::max(trailing_space_start(s.substr(0, start)), start_offset);
    if (t.rstrip) stop += leading_space_len(s.substr(stop));
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, t.id});
    start_offset = stop;
  }
  if (start_offset != s.size()) out.push_back({start_offset, s.size(), -1});
}

}  // namespace vtllm::text
