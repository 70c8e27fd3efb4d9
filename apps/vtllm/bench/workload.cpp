#include "bench/workload.h"

#include <array>

#include "base/error.h"
#include "base/hash.h"

namespace vtllm::bench {

namespace {

constexpr std::array<const char*, 48> kWords = {
    "the",   "of",    "and",   "to",    "in",    "is",    "that",  "for",   "it",    "as",
    "was",   "with",  "be",    "by",    "on",    "not",   "he",    "this",  "are",   "or",
    "his",   "from",  "at",    "which", "but",   "have",  "an",    "had",   "they",  "you",
    "were",  "their", "one",   "all",   "we",    "can",   "her",   "has",   "there", "been",
    "if",    "more",  "when",  "will",  "would", "who",   "so",    "no"};

}  // namespace

PromptKind parse_prompt_kind(const std::string& s) {
  if (s == "ids") return PromptKind::kTokenIds;
  if (s == "text") return PromptKind::kText;
  VT_THROW("--prompt-kind '", s, "': expected 'ids' or 'text'");
}

const char* prompt_kind_name(PromptKind k) { return k == PromptKind::kTokenIds ? "ids" : "text"; }

std::vector<Prompt> make_prompts(const WorkloadConfig& config, int64_t count) {
  VT_REQUIRE(config.input_len > 0, "--input-len must be positive, got ", config.input_len);
  VT_REQUIRE(config.token_lo >= 0 && config.token_lo < config.token_hi, "token id range [",
           config.token_lo, ", ", config.token_hi, ") is empty");
  VT_REQUIRE(count >= 0, "prompt count ", count, " is negative");
  std::vector<Prompt> prompts(static_cast<size_t>(count));
  const uint64_t range = uint64_t(config.token_hi - config.token_lo);
  for (int64_t i = 0; i < count; ++i) {
    Prompt& p = prompts[size_t(i)];
    p.nominal_tokens = config.input_len;
    const uint64_t base = splitmix64(config.seed ^ splitmix64(uint64_t(i)));
    for (int64_t t = 0; t < config.input_len; ++t) {
      const uint64_t r = splitmix64(base + uint64_t(t));
      if (config.kind == PromptKind::kTokenIds) {
        p.ids.push_back(config.token_lo + int32_t(r % range));
      } else {
        if (t) p.text += ' ';
        p.text += kWords[r % kWords.size()];
      }
    }
  }
  return prompts;
}

}  // namespace vtllm::bench
