// libFuzzer target: any bytes as a chat template, parsed and rendered against a
// fixed conversation with tight bounds, must render or throw TemplateError:
// never crash, hang, leak, or grow without limit.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "text/jinja/json.h"
#include "text/jinja/template.h"

namespace {

const vtllm::jinja::Value& context() {
  static const vtllm::jinja::Value ctx = vtllm::jinja::json_loads(R"({
    "messages": [
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "Héllo \"there\" 😀"},
      {"role": "assistant", "content": "<think>\nhm\n</think>\n\nHi", "reasoning_content": "hm",
       "tool_calls": [{"id": "c1", "type": "function",
                       "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},
      {"role": "tool", "content": "{\"ok\": 1}"},
      {"role": "user", "content": [{"type": "text", "text": "part"}, {"type": "image"}]}],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}},
                              "required": ["a"]}}}],
    "documents": null, "add_generation_prompt": true, "enable_thinking": false,
    "bos_token": "<s>", "eos_token": "</s>"})");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vtllm::jinja::TemplateOptions options;
  options.limits.max_call_depth = 32;
  options.limits.max_loop_iterations = 20000;
  options.limits.max_output_bytes = 1 << 20;
  options.clock = [] { return vtllm::jinja::Now{}; };
  try {
    vtllm::jinja::Template t(std::string_view(reinterpret_cast<const char*>(data), size), options);
    (void)t.render(context());
  } catch (const vtllm::jinja::TemplateError&) {
  }
  return 0;
}
