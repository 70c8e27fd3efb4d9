// ChatTemplate: a model's chat template applied the way transformers'
// apply_chat_template applies it (render_jinja_template in chat_template_utils.py).
//
// The template renders with the variables messages, tools (None when absent),
// documents (None when absent), add_generation_prompt, the special tokens of
// tokenizer_config.json (bos_token, eos_token, unk_token, sep_token, pad_token,
// cls_token, mask_token; those that are null are left undefined), and any extra
// keyword arguments, which override the special tokens. Messages and tools pass
// through as given: content may be a string or a list of parts.
// tools/text/render_jinja.py is the Python reference of exactly this behaviour.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/jinja/template.h"

namespace vtllm {

class ChatTemplate {
 public:
  // Reads a model folder as transformers does: DIR/chat_template.jinja when present,
  // else DIR/chat_template.json's "chat_template" (the processor's legacy file), else
  // tokenizer_config.json's chat_template (a string, or a list of {"name",
  // "template"}); `template_file`, when not empty, overrides them all. Special
  // tokens come from tokenizer_config.json (strings or AddedToken dicts).
  // Throws vtllm::Error naming the file when there is no template or JSON is bad,
  // and jinja::TemplateError (Syntax) when the template does not parse.
  static ChatTemplate from_dir(const std::string& dir, const std::string& template_file = "");

  // One template (named "default") or several named ones, and the special tokens.
  ChatTemplate(std::vector<std::pair<std::string, std::string>> named_sources,
               std::vector<std::pair<std::string, std::string>> special_tokens,
               jinja::TemplateOptions options = {});

  // Renders an OpenAI chat-completions request body (JSON): messages, optional
  // tools and documents, add_generation_prompt (default true) and
  // chat_template_kwargs (a dict; it may not set the four names above). With
  // several named templates, "tool_use" is chosen when tools are given and it
  // exists, else "default". Throws vtllm::Error for a malformed request and
  // jinja::TemplateError for a failing template (Raised carries its message).
  std::string render_request(std::string_view request_json) const;

  std::string render(const jinja::Value& messages, const jinja::Value& tools, const jinja::Value& documents,
                     bool add_generation_prompt, const jinja::Value& extra_kwargs) const;

  const std::vector<std::pair<std::string, std::string>>& special_tokens() const { return special_tokens_; }

 private:
  const jinja::Template& pick(bool has_tools) const;

  std::vector<std::pair<std::string, jinja::Template>> templates_;
  std::vector<std::pair<std::string, std::string>> special_tokens_;
};

}  // namespace vtllm
