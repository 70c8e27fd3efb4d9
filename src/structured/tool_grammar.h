// Grammars that force a tool call (OpenAI `tool_choice: required` or a named function), in the
// format the model was trained to write, built on json_schema.h.
//
// Qwen3.5 / Qwen3.6 XML (vLLM's qwen3_coder / qwen3_xml parsers), as the chat template renders
// a call:
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// Parameters come in the schema's `properties` order, required ones always, optional ones at
// most once, no undeclared ones. A VALUE whose schema admits strings (type "string" or a type
// list with "string", or no type) is raw text: enum/const strings literally, pattern and format
// through the regex, min/maxLength as that many non-'<' characters, otherwise any text not
// containing "\n</parameter>". Any other VALUE is the compact JSON of its schema.
// Hermes JSON (Qwen3, Qwen2.5): <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>
// with ARGS the JSON of the parameters schema.
// Several calls (parallel_tool_calls) are separated by one "\n", as both templates render them.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "structured/json_schema.h"

namespace vtllm::structured {

// One callable function: its name and its `parameters` JSON Schema (an object schema; null or
// an empty object means no arguments).
struct ToolSpec {
  std::string name;
  nlohmann::ordered_json parameters;
};

// Which text format the model writes calls in.
enum class ToolCallFormat { kQwenXml, kHermesJson };

// How many calls and how values are spaced.
struct ToolGrammarOptions {
  ToolCallFormat format = ToolCallFormat::kQwenXml;
  bool parallel = false;     // true: one or more calls; false: exactly one
  JsonSchemaOptions json{};  // for JSON values (arguments, non-string parameters)
};

// GBNF rooted at `root` matching one call (or 1..n when parallel) of any of `tools` (pass just
// the named function for a named tool_choice). Throws vtllm::Error when `tools` is empty, a
// name is empty or has characters the format cannot carry ('>' or newline for XML), or a
// parameters schema is unsupported (the message names the tool).
std::string tool_call_gbnf(std::span<const ToolSpec> tools, const ToolGrammarOptions& options);

}  // namespace vtllm::structured
