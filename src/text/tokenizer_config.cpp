#include "text/tokenizer_config.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json.h"

namespace vtllm::text {

namespace {

// A special token is written as "text" or as {"__type": "AddedToken", "content": "text", ...}.
std::optional<std::string> token_field(const Json& cfg, std::string_view key, const JsonPath& at) {
  const Json* v = json_optional(cfg, key, at);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  return json_string(json_member(*v, "content", at.key(key)), at.key(key).key("content"));
}

bool rebuilds_post_processor(const std::string& cls) {
  for (const char* name : {"LlamaTokenizer", "LlamaTokenizerFast", "GemmaTokenizer",
                           "GemmaTokenizerFast", "CodeLlamaTokenizer", "CodeLlamaTokenizerFast"}) {
    if (cls == name) return true;
  }
  return false;
}

}  // namespace

TokenizerConfig parse_tokenizer_config(std::string_view json_text, std::string_view origin) {
  const Json cfg = json_parse(json_text, origin);
  const JsonPath at{std::string(origin)};
  json_object(cfg, at);
  TokenizerConfig c;
  c.bos_token = token_field(cfg, "bos_token", at);
  c.eos_token = token_field(cfg, "eos_token", at);
  c.pad_token = token_field(cfg, "pad_token", at);
  c.unk_token = token_field(cfg, "unk_token", at);
  c.tokenizer_class = json_string_or(cfg, "tokenizer_class", "", at);
  if (rebuilds_post_processor(c.tokenizer_class)) {
    c.add_bos_token = json_bool_or(cfg, "add_bos_token", true, at);
    c.add_eos_token = json_bool_or(cfg, "add_eos_token", false, at);
  }
  return c;
}

}  // namespace vtllm::text
