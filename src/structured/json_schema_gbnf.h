// Internal to src/structured: pieces of GBNF text shared by json_schema.cpp,
// json_schema_regex.cpp and tool_grammar.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vtllm::structured::gbnf {

// A double-quoted GBNF literal matching the UTF-8 bytes of `text` exactly.
std::string literal(std::string_view text);

// A GBNF char class over inclusive code-point ranges, `negated` for `[^...]`. Ranges may be
// unsorted or overlap; an empty positive set is an error for the caller to avoid.
std::string char_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, bool negated);

// The UTF-8 encoding of code point `cp`.
std::string utf8(uint32_t cp);

// One character of a JSON string's content as it may be written inside the quotes: a raw
// character other than `"`, `\` and controls, or an escape (\uXXXX outside D800-DFFF).
inline constexpr std::string_view kJsonChar =
    R"(( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} ) ) ))";
// The escape alternatives of kJsonChar alone (a backslash and what follows).
inline constexpr std::string_view kJsonEscape =
    R"("\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} ) ))";

// The code points of UTF-8 `text`; throws vtllm::Error on malformed UTF-8.
std::vector<uint32_t> code_points(std::string_view text);

// `expr{min,max}` with max < 0 meaning unbounded, in the shortest GBNF spelling.
std::string repeat(std::string_view expr, int min, int max);

}  // namespace vtllm::structured::gbnf

namespace vtllm::structured {

struct JsonSchemaOptions;

// Several schemas compiled into one rule set (the tool-call grammars hold one per tool or
// parameter); json_schema_to_gbnf is one schema in one set. Rule names never collide and
// identical bodies share one rule.
class SchemaRuleSet {
 public:
  explicit SchemaRuleSet(const JsonSchemaOptions& options);
  ~SchemaRuleSet();
  SchemaRuleSet(const SchemaRuleSet&) = delete;
  SchemaRuleSet& operator=(const SchemaRuleSet&) = delete;

  // The name of a rule matching the JSON of `schema`, whose `$ref`s point into `root` (null:
  // `schema` itself; both borrowed for this call only); new rule names start with `prefix`.
  // Errors as json_schema_to_gbnf, with pointers relative to the root.
  std::string rule(const nlohmann::ordered_json& schema, const std::string& prefix,
                   const nlohmann::ordered_json* root = nullptr);
  // A rule matching a string value of `schema` written raw (not JSON-escaped, no quotes):
  // `format` and `pattern` as in JSON, min/maxLength as that many characters of `length_char`,
  // otherwise `unconstrained` (a rule name or expression the caller provides).
  std::string raw_string(const nlohmann::ordered_json& schema, const std::string& prefix,
                         const std::string& length_char, const std::string& unconstrained);
  // The name of a rule `name ::= body` (an existing one when the body is the same).
  std::string add(const std::string& hint, const std::string& body);
  // Sets the body of rule `name` (made by add); for rules that refer to each other.
  void replace(const std::string& name, const std::string& body);
  // The grammar: `root ::= top` and every rule made so far, one per line.
  std::string text(const std::string& top) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vtllm::structured
