// json_schema_validate.h: each keyword's verdict and the reported pointers, on hand-made cases
// whose answers follow from the JSON Schema spec.
#include "structured/json_schema_validate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"

namespace vtllm::structured {
namespace {

using nlohmann::json;

std::optional<SchemaViolation> check(const char* instance, const char* schema) {
  return validate_json_schema(json::parse(instance), json::parse(schema));
}

void expect_valid(const char* instance, const char* schema) {
  auto v = check(instance, schema);
  EXPECT_FALSE(v) << instance << " vs " << schema << ": " << v->instance_pointer << " "
                  << v->message;
}

void expect_violation(const char* instance, const char* schema, const std::string& instance_ptr,
                      const std::string& schema_ptr) {
  auto v = check(instance, schema);
  ASSERT_TRUE(v) << instance << " vs " << schema;
  EXPECT_EQ(v->instance_pointer, instance_ptr) << v->message;
  EXPECT_EQ(v->schema_pointer, schema_ptr) << v->message;
  EXPECT_FALSE(v->message.empty());
}

TEST(JsonSchemaValidate, Types) {
  expect_valid("1", R"({"type": "integer"})");
  expect_valid("1.0", R"({"type": "integer"})");
  expect_violation("1.5", R"({"type": "integer"})", "", "/type");
  expect_valid("1.5", R"({"type": "number"})");
  expect_valid("null", R"({"type": ["string", "null"]})");
  expect_violation("true", R"({"type": ["string", "null"]})", "", "/type");
  expect_violation("\"x\"", "false", "", "");
  expect_valid("[1]", "true");
}

TEST(JsonSchemaValidate, ObjectsReportThePathOfTheFirstViolation) {
  const char* s = R"({"type": "object", "properties": {"a": {"type": "array", "items": {
      "type": "object", "properties": {"b/c": {"type": "string"}}}}}, "required": ["a"]})";
  expect_valid(R"({"a": [{"b/c": "x"}, {}], "z": 1})", s);
  expect_violation(R"({"a": [{"b/c": "x"}, {"b/c": 2}]})", s, "/a/1/b~1c",
                   "/properties/a/items/properties/b~1c/type");
  expect_violation(R"({"z": 1})", s, "", "/required");
  expect_violation(R"({"a": 1, "x": 2})",
                   R"({"properties": {"a": {}}, "additionalProperties": false})", "/x",
                   "/additionalProperties");
  expect_violation(R"({"a": 1, "x": "s"})",
                   R"({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}})",
                   "/x", "/additionalProperties/type");
  expect_violation(R"({"n1": "s"})", R"({"patternProperties": {"^n": {"type": "integer"}}})", "/n1",
                   "/patternProperties/^n/type");
  expect_violation(R"({})", R"({"minProperties": 1})", "", "/minProperties");
  expect_violation(R"({"a": 1, "b": 2})", R"({"maxProperties": 1})", "", "/maxProperties");
}

TEST(JsonSchemaValidate, Arrays) {
  expect_violation("[1, 2, 3]", R"({"maxItems": 2})", "", "/maxItems");
  expect_violation("[]", R"({"minItems": 1})", "", "/minItems");
  expect_violation(R"(["a", 1, "x"])",
                   R"({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
                   "/2", "/items");
  expect_violation(R"(["a", "b"])", R"({"prefixItems": [{"type": "string"}, {"type": "integer"}]})",
                   "/1", "/prefixItems/1/type");
  expect_violation(R"([true, 3])",
                   R"({"items": [{"type": "boolean"}], "additionalItems": {"type": "string"}})",
                   "/1", "/additionalItems/type");
  expect_violation("[1, 2, 1]", R"({"uniqueItems": true})", "/2", "/uniqueItems");
  expect_valid("[1, 2, 3]", R"({"uniqueItems": true, "items": {"type": "integer"}})");
}

TEST(JsonSchemaValidate, StringsAndNumbers) {
  expect_valid("\"\xc3\xa9\xc3\xa9\"", R"({"maxLength": 2, "minLength": 2})");
  expect_violation("\"abc\"", R"({"maxLength": 2})", "", "/maxLength");
  expect_violation("\"abc\"", R"({"pattern": "^b"})", "", "/pattern");
  expect_valid("\"abc\"", R"({"pattern": "b"})");
  expect_violation("5", R"({"minimum": 5, "exclusiveMinimum": true})", "", "/minimum");
  expect_violation("5", R"({"exclusiveMaximum": 5})", "", "/exclusiveMaximum");
  expect_valid("5", R"({"minimum": 5, "maximum": 5})");
  expect_violation("7", R"({"multipleOf": 2})", "", "/multipleOf");
  expect_valid("0.3", R"({"multipleOf": 0.1})");
  expect_violation("\"x\"", R"({"enum": ["a", 1]})", "", "/enum");
  expect_valid("1.0", R"({"enum": ["a", 1]})");
  expect_violation("{\"a\": 2}", R"({"const": {"a": 1}})", "", "/const");
}

TEST(JsonSchemaValidate, Formats) {
  struct Case {
    const char* format;
    const char* good;
    const char* bad;
  };
  for (const Case& c :
       {Case{"date", "2024-02-29", "2023-02-29"}, Case{"date", "1999-12-31", "1999-13-01"},
        Case{"time", "23:59:59.5+05:30", "24:00:00Z"}, Case{"time", "00:00:00z", "00:00:00"},
        Case{"date-time", "2020-01-01T10:00:00Z", "2020-01-01 10:00:00"},
        Case{"uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000"},
        Case{"email", "first.last+tag@mail.example.com", "first..last@example.com"},
        Case{"email", "a@b.co", "a@-b.co"}, Case{"ipv4", "192.168.0.255", "192.168.0.256"},
        Case{"ipv4", "0.0.0.0", "01.2.3.4"}, Case{"uri", "https://x.org/a?b=%20#f", "no scheme"},
        Case{"uri", "urn:isbn:123", "http://bad%zz"}}) {
    std::string schema = std::string(R"({"format": ")") + c.format + "\"}";
    EXPECT_FALSE(validate_json_schema(json(c.good), json::parse(schema)))
        << c.format << " " << c.good;
    EXPECT_TRUE(validate_json_schema(json(c.bad), json::parse(schema))) << c.format << " " << c.bad;
  }
  expect_valid("\"anything\"", R"({"format": "hostname"})");
}

TEST(JsonSchemaValidate, CombinatorsAndRefs) {
  const char* one = R"({"oneOf": [{"type": "integer"}, {"minimum": 0}]})";
  expect_valid("-1", one);
  expect_violation("1", one, "", "/oneOf");
  expect_violation("\"x\"", R"({"anyOf": [{"type": "integer"}, {"type": "null"}]})", "", "/anyOf");
  expect_violation("3", R"({"allOf": [{"minimum": 0}, {"maximum": 2}]})", "", "/allOf/1/maximum");
  expect_violation("3", R"({"not": {"type": "integer"}})", "", "/not");
  const char* list =
      R"({"$defs": {"l": {"type": ["object", "null"], "properties": {"v": {"type": "integer"},
      "next": {"$ref": "#/$defs/l"}}}}, "$ref": "#/$defs/l"})";
  expect_valid(R"({"v": 1, "next": {"v": 2, "next": null}})", list);
  expect_violation(R"({"v": 1, "next": {"v": "2"}})", list, "/next/v",
                   "/$defs/l/properties/v/type");
  EXPECT_THROW(check("1", R"({"$ref": "#/missing"})"), Error);
  EXPECT_THROW(check("\"a\"", R"({"pattern": "("})"), Error);
}

}  // namespace
}  // namespace vtllm::structured
