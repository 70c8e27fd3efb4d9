// A compiled PCRE2 pattern (UTF + UCP, JIT) with the matching semantics that HF
// tokenizers gets from Oniguruma.
//
// Patterns in tokenizer.json are written for Oniguruma. Where PCRE2 reads the
// same syntax differently the pattern is rewritten at compile time: `\s` and
// `\S` outside a character class and `\s` inside one mean Unicode White_Space
// (PCRE2's UCP `\s` also matches U+180E, Oniguruma's does not).
//
// Thread-safety: a Regex is immutable after construction; find_all() may be
// called from many threads at once (match data is per call, the JIT stack per
// thread).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vtllm::text {

struct Match {
  size_t start;
  size_t end;
};

class Regex {
 public:
  enum class Syntax { kOniguruma, kLiteral };
  // Throws vtllm::Error naming `what` and PCRE2's message when the pattern does
  // not compile.
  Regex(std::string_view pattern, Syntax syntax, std::string_view what);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Every match in `text` (valid UTF-8), left to right, non-overlapping, as
  // Oniguruma's find_iter yields them: an empty match right where the
  // previous match ended is skipped by advancing one character.
  void find_all(std::string_view text, std::vector<Match>& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The pattern with Oniguruma-only spellings rewritten for PCRE2 (exposed for tests).
std::string onig_to_pcre2(std::string_view pattern);

}  // namespace vtllm::text
