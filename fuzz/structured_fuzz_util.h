// Shared by the structured/ fuzz targets: drive a Matcher over a small
// vocabulary with choices taken from the fuzz input, checking that the mask
// and accept_token agree.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.h"
#include "structured/matcher.h"

namespace vtllm::structured::fuzz {

inline const TokenVocab& small_vocab() {
  static const TokenVocab vocab = [] {
    std::vector<std::string> b;
    for (int i = 0; i < 128; ++i) b.push_back(std::string(1, static_cast<char>(i)));
    for (const char* s : {"ab", "abc", "\"a", "{\"", "\":", "  ", "\xC3\xA9", "\xC3", "\xA9", "12",
                          "true", "\xF0\x9F\x98\x80", "\\u", "", "<eos>"}) {
      b.push_back(s);
    }
    const auto stop = static_cast<TokenId>(b.size() - 1);
    return TokenVocab(std::move(b), {stop});
  }();
  return vocab;
}

// Compiles `g` (rejections are fine) and takes up to 32 steps, each picking an
// allowed token by the next input byte; aborts when mask and matcher disagree.
inline void drive(const Grammar& g, const uint8_t* choices, size_t n) {
  size_t elements = 0;
  for (const Rule& r : g.rules) {
    for (const Alternative& a : r.alternatives) elements += a.size() + 1;
  }
  if (elements > 200000) return;  // bounded work per input
  std::shared_ptr<const CompiledGrammar> compiled;
  try {
    compiled = CompiledGrammar::compile(g, small_vocab());
  } catch (const Error&) {
    return;
  }
  const TokenVocab& vocab = small_vocab();
  Matcher m(compiled);
  std::vector<uint32_t> mask(vocab.mask_words());
  for (size_t step = 0; step < 32 && step < n && !m.is_terminated(); ++step) {
    m.fill_next_token_bitmask(mask);
    std::vector<TokenId> allowed;
    for (size_t id = 0; id < vocab.size(); ++id) {
      const bool bit = (mask[id / 32] >> (id % 32)) & 1;
      if (bit) allowed.push_back(static_cast<TokenId>(id));
      // A disallowed token must be refused (and leave the matcher as it was).
      if (!bit && id % 7 == step % 7) {
        Matcher copy = m;
        if (copy.accept_token(static_cast<TokenId>(id))) std::abort();
      }
    }
    if (allowed.empty()) break;
    if (!m.accept_token(allowed[choices[step] % allowed.size()])) std::abort();
    (void)m.forced_tokens(4);
  }
  if (m.num_steps() > 0) m.rollback(1 + choices[0] % m.num_steps());
}

}  // namespace vtllm::structured::fuzz
