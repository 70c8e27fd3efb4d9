// libFuzzer target: JSON Schema text -> GBNF (json_schema.h), the tool-call grammars over it
// (tool_grammar.h) and the validator (json_schema_validate.h) must each accept or throw
// vtllm::Error, never crash or throw anything else.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "structured/json_schema.h"
#include "structured/json_schema_validate.h"
#include "structured/tool_grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;  // grammar size grows with the schema; keep iterations fast
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)vtllm::structured::json_schema_text_to_gbnf(text);
  } catch (const vtllm::Error&) {
  }
  nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(text, nullptr, false);
  if (ordered.is_discarded()) return 0;
  for (auto format : {vtllm::structured::ToolCallFormat::kQwenXml,
                      vtllm::structured::ToolCallFormat::kHermesJson}) {
    try {
      vtllm::structured::ToolGrammarOptions options;
      options.format = format;
      options.parallel = true;
      std::vector<vtllm::structured::ToolSpec> tools = {{"f", ordered}};
      (void)vtllm::structured::tool_call_gbnf(tools, options);
    } catch (const vtllm::Error&) {
    }
  }
  nlohmann::json schema = nlohmann::json::parse(text, nullptr, false);
  // Instances: the schema itself and a few of every type.
  for (const nlohmann::json& instance :
       {schema, nlohmann::json(nullptr), nlohmann::json(7), nlohmann::json(-2.5),
        nlohmann::json("2024-01-01"), nlohmann::json::parse(R"({"a": [1, "x", {"b": null}]})")}) {
    try {
      (void)vtllm::structured::validate_json_schema(instance, schema);
    } catch (const vtllm::Error&) {
    }
  }
  return 0;
}
