// A JSON Schema validator: checks an instance against a schema and reports the first
// violation. Independent of json_schema.h's grammar compiler (used to check what it accepts).
//
// Semantics are standard JSON Schema (draft 2020-12 with the draft-4..7 spellings of items /
// additionalItems / definitions / boolean exclusive bounds): an absent additionalProperties
// allows any extra property, oneOf means exactly one, `pattern` is an ECMAScript search over
// the string's UTF-8 bytes (std::regex), lengths count code points. Keywords: type, enum,
// const, properties, required, additionalProperties, patternProperties, min/maxProperties,
// items, prefixItems, additionalItems, min/maxItems, uniqueItems, anyOf, oneOf, allOf, not,
// $ref (`#...` pointers), minLength, maxLength, pattern, format (date, time, date-time, uuid,
// email, ipv4, uri; others ignored), minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// multipleOf. Other keywords are ignored. Thread-safe (no state).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

namespace vtllm::structured {

// Where and why an instance fails its schema.
struct SchemaViolation {
  std::string instance_pointer;  // JSON pointer into the instance ("" = the whole value)
  std::string schema_pointer;    // JSON pointer of the failing keyword in the schema
  std::string message;           // e.g. "expected type integer, got string"
};

// The first violation of `schema` by `instance`, or nullopt when it validates. A `$ref` that
// does not resolve, or a pattern std::regex rejects, throws vtllm::Error.
std::optional<SchemaViolation> validate_json_schema(const nlohmann::json& instance,
                                                    const nlohmann::json& schema);

}  // namespace vtllm::structured
