// JSON Schema -> GBNF text (llama.cpp's dialect), and the generic `json_object` grammar.
//
// The text defines `root` and only uses: `name ::= ...` (one rule per line), double-quoted
// literals (escapes \" \\ \n \r \t \xHH), char classes `[...]` / `[^...]` (escapes \xHH, \uHHHH),
// groups, `|`, and the quantifiers `* + ? {m} {m,} {m,n}`. A grammar matches a JSON text whose
// value validates against the schema; it is a subset of the valid texts in these ways:
//   - whitespace: see JsonSchemaOptions::any_whitespace; no whitespace before or after the value;
//   - properties appear in the schema's `properties` order (xgrammar's choice), each at most once;
//     additional properties (when allowed) come after the declared ones;
//   - strings use raw characters except the escapes \" \\ \/ \b \f \n \r \t and \uXXXX outside
//     the surrogate range (D800-DFFF); `pattern` and `format` strings use one escape per char;
//   - numbers with bounds have no exponent; integers have no fraction, exponent or "-0";
//   - oneOf is compiled as anyOf (exclusivity is not expressible in a context-free grammar);
//   - JsonSchemaOptions::strict (the default; xgrammar's strict_mode, which vLLM leaves on):
//     an absent `additionalProperties` is false and absent `items` / `additionalItems` allow
//     no items past `prefixItems`, except in the bare {"type": "object"} and {"type":
//     "array"} (with only annotations beside `type`), which are any object and any array;
//     without strict, absent means any;
//   - additional property names are compared with the declared ones character by character:
//     a declared name spelled with a JSON escape is taken as another name.
// Supported: type (incl. arrays of types), enum, const, properties, required,
// additionalProperties (bool or schema), items (schema, or array as a tuple), prefixItems,
// additionalItems, minItems, maxItems, anyOf, oneOf, allOf (merged when the parts do not
// conflict), $ref to any `#...` JSON pointer (recursion becomes recursive rules), $defs and
// definitions, pattern (regex_to_gbnf's subset), format date / time / date-time / uuid / email /
// ipv4 / uri (other formats are annotations and ignored, as the spec allows), minLength,
// maxLength, minimum, maximum, exclusiveMinimum, exclusiveMaximum (numeric and draft-4 boolean
// forms; integer-valued bounds for `number`), boolean schemas. Anything else that constrains a
// value (multipleOf, not, if/then/else, patternProperties, propertyNames, contains, uniqueItems
// true, min/maxProperties, dependent*, unevaluated*, remote $ref, ...) throws vtllm::Error
// naming the keyword and its JSON pointer in the schema, e.g.
// "JSON schema: unsupported keyword 'multipleOf' at #/properties/n".
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace vtllm::structured {

// How the grammar spaces its JSON and how strictly it reads the schema.
struct JsonSchemaOptions {
  // false (default): compact JSON with at most one optional space after `{ [ , :` and before
  // `} ] , :` (both `{"a":1}` and `{"a": 1}` match). true: any run of [ \t\n] there, as
  // xgrammar's any_whitespace (vLLM's default: --structured-outputs-config
  // disable_any_whitespace off).
  bool any_whitespace = false;
  // true (default): absent additionalProperties / items forbid extras, as above.
  bool strict = true;
};

// The GBNF for `schema`, rooted at `root`. Keeps the schema's property order (an ordered_json
// as parsed from the request text). Throws vtllm::Error on unsupported or unsatisfiable schemas.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                const JsonSchemaOptions& options = {});
// Same, from a nlohmann::json (keys sorted, so properties are ordered by name).
std::string json_schema_to_gbnf(const nlohmann::json& schema,
                                const JsonSchemaOptions& options = {});
// Same, from the schema's JSON text (parsed in order). Bad JSON throws vtllm::Error.
std::string json_schema_text_to_gbnf(std::string_view schema_text,
                                     const JsonSchemaOptions& options = {});

// The grammar of `response_format: json_object`: any JSON value whose top level is an object.
std::string json_object_gbnf(const JsonSchemaOptions& options = {});

// GBNF for a JSON-Schema `pattern` regex (ECMAScript subset: literals, escapes \d \w \s \D \W
// \S \n \t \r \f \v \0 \xHH \uHHHH and escaped punctuation, classes with ranges and negation,
// `.`, groups `(...)` and `(?:...)`, `|`, quantifiers * + ? {m} {m,} {m,n} with lazy `?`
// ignored, ^ at the start and $ at the end). The result is an expression (no rule definitions)
// over the string's characters: when `json_escaped`, as they appear inside a JSON string
// literal (`"` and `\` and control characters escaped), else raw. Unanchored ends match any
// prefix / suffix (search semantics, as JSON Schema). Backreferences, lookaround, \b and
// anchors elsewhere throw vtllm::Error naming them.
std::string regex_to_gbnf(std::string_view pattern, bool json_escaped);

}  // namespace vtllm::structured
