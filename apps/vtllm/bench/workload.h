// Prompts of a benchmark workload, generated from a seed so every engine and peer
// receives exactly the same requests.
//
// kTokenIds: `input_len` token ids drawn uniformly from [token_lo, token_hi), sent as
//   the OpenAI `prompt` list of integers (vLLM and llama.cpp accept it), so the prompt
//   is exactly input_len tokens on every server without a tokenizer on the client.
//   The default range keeps clear of special and added tokens in Qwen-family vocabularies.
// kText: `input_len` words from a list of common English words, each of which is a
//   single token in the usual BPE vocabularies; the server's usage reports the true count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vtllm::bench {

enum class PromptKind { kTokenIds, kText };

PromptKind parse_prompt_kind(const std::string& s);  // "ids" or "text"; throws otherwise
const char* prompt_kind_name(PromptKind k);

struct WorkloadConfig {
  PromptKind kind = PromptKind::kTokenIds;
  int64_t input_len = 512;
  uint64_t seed = 0;
  int32_t token_lo = 1000;
  int32_t token_hi = 100000;
};

struct Prompt {
  std::vector<int32_t> ids;  // kTokenIds
  std::string text;          // kText
  int64_t nominal_tokens = 0;
};

// `count` prompts; prompt i depends only on (config, i), not on count.
std::vector<Prompt> make_prompts(const WorkloadConfig& config, int64_t count);

}  // namespace vtllm::bench
