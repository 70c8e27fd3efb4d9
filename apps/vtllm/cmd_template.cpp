// vtllm template DIR: an OpenAI chat-completions request body on stdin -> the
// prompt the model's chat template renders, exactly, with nothing added.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "text/chat_template.h"

namespace vtllm::cli {

namespace {

constexpr const char* kUsage =
    "usage: vtllm template DIR [--chat-template FILE]\n"
    "  DIR is a model directory: its chat_template.jinja, or the chat_template of its\n"
    "  tokenizer_config.json, with the special tokens (bos_token, eos_token, ...) there.\n"
    "  Reads a chat-completions request body (JSON) from stdin: messages, optional tools\n"
    "  and documents, add_generation_prompt (default true), chat_template_kwargs (extra\n"
    "  template variables, e.g. {\"enable_thinking\": false}). Prints the rendered prompt\n"
    "  exactly as transformers' apply_chat_template renders it, with no newline added.\n"
    "  --chat-template FILE  use this Jinja template instead of the model's\n";

}  // namespace

int cmd_template(int argc, char** argv) {
  Args args(argc, argv, {"chat-template"}, {"help"});
  if (args.has("help")) {
    std::printf("%s", kUsage);
    return 0;
  }
  if (args.positional().size() != 1) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const ChatTemplate tmpl = ChatTemplate::from_dir(args.positional()[0], args.get_or("chat-template", ""));
  std::ostringstream body;
  body << std::cin.rdbuf();
  const std::string prompt = tmpl.render_request(body.str());
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  return 0;
}

}  // namespace vtllm::cli
