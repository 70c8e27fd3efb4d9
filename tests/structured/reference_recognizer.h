// Test helpers: a memoised recogniser over the grammar IR written
// independently of the automaton (span-based, CYK style), and string
// enumeration.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "structured/grammar.h"

namespace vtllm::structured::testing {

// True when `s` is in the language of `g` (which must not be left-recursive).
class ReferenceRecognizer {
 public:
  explicit ReferenceRecognizer(const Grammar& g) : g_(g) {}

  bool matches(std::string_view s) {
    s_ = s;
    memo_.clear();
    return derives(g_.root, 0, s.size());
  }

 private:
  bool derives(int32_t rule, size_t i, size_t j) {
    const uint64_t key = (static_cast<uint64_t>(rule) << 40) | (i << 20) | j;
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second == 1;
    memo_[key] = 0;  // in progress: a cycle without progress derives nothing
    bool ok = false;
    for (const Alternative& alt : g_.rules[static_cast<size_t>(rule)].alternatives) {
      if (seq(alt, 0, i, j)) {
        ok = true;
        break;
      }
    }
    memo_[key] = ok ? 1 : 0;
    return ok;
  }

  bool seq(const Alternative& alt, size_t k, size_t i, size_t j) {
    if (k == alt.size()) return i == j;
    const Element& e = alt[k];
    if (e.kind == Element::Kind::kBytes) {
      return i < j && g_.byte_sets[static_cast<size_t>(e.index)][static_cast<uint8_t>(s_[i])] &&
             seq(alt, k + 1, i + 1, j);
    }
    for (size_t m = i; m <= j; ++m) {
      if (derives(e.index, i, m) && seq(alt, k + 1, m, j)) return true;
    }
    return false;
  }

  const Grammar& g_;
  std::string_view s_;
  std::unordered_map<uint64_t, int> memo_;
};

// Every string over `alphabet` of length 0..max_len, shortest first.
inline std::vector<std::string> all_strings(std::string_view alphabet, size_t max_len) {
  std::vector<std::string> out{""};
  size_t begin = 0;
  for (size_t len = 1; len <= max_len; ++len) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i) {
      for (char c : alphabet) out.push_back(out[i] + c);
    }
    begin = end;
  }
  return out;
}

}  // namespace vtllm::structured::testing
