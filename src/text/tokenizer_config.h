// What vtllm reads from a model directory's tokenizer_config.json: the named
// special tokens and transformers' add_bos_token / add_eos_token rule.
#pragma once

#include <optional>
#include <string>

namespace vtllm::text {

struct TokenizerConfig {
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  std::string tokenizer_class;
  // Set only for the classes whose transformers implementation rebuilds the
  // post-processor from these flags (LlamaTokenizer(Fast), GemmaTokenizer(Fast),
  // CodeLlamaTokenizer(Fast)); defaults true / false as there.
  std::optional<bool> add_bos_token, add_eos_token;
};

// Parses the text of tokenizer_config.json; errors name `origin` and the field.
TokenizerConfig parse_tokenizer_config(std::string_view json_text, std::string_view origin);

}  // namespace vtllm::text
