// json_schema.h: the language of each emitted grammar (through the reference recogniser in
// json_schema_test_gbnf.h) against references computed differently: std::regex for patterns,
// integer arithmetic for bounds, the validator for formats and whole instances.
#include "structured/json_schema.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "base/error.h"
#include "json_schema_test_gbnf.h"
#include "structured/json_schema_validate.h"

namespace vtllm::structured {
namespace {

using OJson = nlohmann::ordered_json;
using testing::RefGrammar;

RefGrammar grammar_of(const std::string& schema, const JsonSchemaOptions& o = {}) {
  return RefGrammar(json_schema_text_to_gbnf(schema, o));
}

void expect_language(const std::string& schema, const std::vector<std::string>& in,
                     const std::vector<std::string>& out, const JsonSchemaOptions& o = {}) {
  std::string text = json_schema_text_to_gbnf(schema, o);
  RefGrammar g(text);
  for (const std::string& s : in)
    EXPECT_TRUE(g.accepts(s)) << schema << " should accept " << s << "\n" << text;
  for (const std::string& s : out)
    EXPECT_FALSE(g.accepts(s)) << schema << " should reject " << s << "\n" << text;
}

std::string error_of(const std::string& schema) {
  try {
    json_schema_text_to_gbnf(schema);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonSchema, PrimitiveTypes) {
  expect_language(R"({"type": "string"})",
                  {R"("")", R"("a b")", R"("\"\\\n")", R"("\u00e9")", "\"\xc3\xa9\""},
                  {R"(a)", R"("a)", "\"\x01\"", R"("\x")", R"("\ud800")", "1"});
  expect_language(R"({"type": "integer"})", {"0", "-7", "1234567890123"},
                  {"01", "-0", "1.0", "1e3", "+1", ""});
  expect_language(R"({"type": "number"})", {"0", "-0.5", "1e10", "2.5E-3", "-0"},
                  {".5", "1.", "01", "1e", "--1"});
  expect_language(R"({"type": "boolean"})", {"true", "false"}, {"True", "null", "1"});
  expect_language(R"({"type": "null"})", {"null"}, {"nul", "\"null\""});
  expect_language(R"({"type": ["integer", "null"]})", {"3", "null"}, {"\"3\"", "true"});
  expect_language(R"({})", {"1", R"({"a": [1, "x", null]})", "[]", "\"s\""}, {"", "[1,]", "{1:2}"});
  expect_language("true", {"1", "{}"}, {""});
}

TEST(JsonSchema, EnumAndConst) {
  expect_language(R"({"enum": ["a", 1, null, {"k": [true]}]})",
                  {R"("a")", "1", "null", R"({"k":[true]})"}, {R"("b")", "2", R"({"k": [false]})"});
  expect_language(R"({"type": "string", "enum": ["x", 2]})", {R"("x")"}, {"2"});
  expect_language(R"({"const": "he said \"hi\""})", {R"("he said \"hi\"")"}, {R"("he said hi")"});
}

TEST(JsonSchema, ObjectsKeepOrderRequiredAndOptional) {
  std::string s =
      R"({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"},
    "c": {"type": "boolean"}}, "required": ["a"]})";
  expect_language(s,
                  {R"({"a":"x"})", R"({"b":1,"a":"x"})", R"({"b": 1, "a": "x", "c": true})",
                   R"({ "a" : "x" , "c" : false })", R"({"a":"x","c":true})"},
                  {R"({})", R"({"b":1})", R"({"a":"x","b":1})", R"({"a":"x","a":"y"})",
                   R"({"a":"x","d":1})", R"({"a":"x",})", R"({"a":"x"  })", R"({ "a":"x"}  )"});
  // All optional: any ordered subset, including none.
  expect_language(R"({"properties": {"x": {"type": "null"}, "y": {"type": "null"}}})",
                  {"{}", R"({"x":null})", R"({"y":null})", R"({"x":null,"y":null})"},
                  {R"({"y":null,"x":null})", R"({,"y":null})", R"({"x":null,})"});
}

TEST(JsonSchema, AdditionalProperties) {
  std::string base =
      R"({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"])";
  // Strict (default): absent means false when properties are declared.
  expect_language(base + "}", {R"({"id":1})"}, {R"({"id":1,"x":2})"});
  JsonSchemaOptions loose;
  loose.strict = false;
  expect_language(base + "}", {R"({"id":1,"x":2})", R"({"id":1,"x":[{}],"y":"z"})"},
                  {R"({"id":1,"id":2})"}, loose);
  expect_language(base + R"(, "additionalProperties": {"type": "string"}})",
                  {R"({"id":1,"name":"n"})", R"({"id":1,"i":"n","idx":"m","":"e"})"},
                  {R"({"id":1,"name":2})", R"({"id":1,"id":"n"})"});
  expect_language(R"({"type": "object"})", {"{}", R"({"a":{"b":[]}})"}, {"[]"});
  expect_language(R"({"type": "object", "additionalProperties": false})", {"{}"}, {R"({"a":1})"});
  // xgrammar's strict mode: only the bare {"type": "object"} (annotations aside) stays open.
  expect_language(R"({"type": "object", "title": "t", "description": "d", "$comment": "c"})",
                  {"{}", R"({"a":1})"}, {});
  expect_language(R"({"type": "object", "required": []})", {"{}"}, {R"({"a":1})"});
  expect_language(R"({"type": "object", "$id": "x"})", {"{}"}, {R"({"a":1})"});
  expect_language(R"({"type": "object", "required": []})", {"{}", R"({"a":1})"}, {}, loose);
  // Nested: a property that is the bare object is any object.
  expect_language(R"({"properties": {"o": {"type": "object"}}, "required": ["o"]})",
                  {R"({"o":{"k":[1]}})"}, {R"({"o":{},"p":1})"});
}

TEST(JsonSchema, Arrays) {
  expect_language(
      R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
      {"[1]", "[1,2]", "[1, 2, 3]", "[ 1 ]"}, {"[]", "[1,2,3,4]", "[1,]", "[\"a\"]"});
  expect_language(R"({"type": "array"})", {"[]", "[1,\"a\",[]]"}, {"[,]"});
  expect_language(R"({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
                  {"[]", "[\"a\"]", "[\"a\",1]"}, {"[1]", "[\"a\",1,2]", "[\"a\",\"b\"]"});
  expect_language(
      R"({"prefixItems": [{"type": "string"}], "items": {"type": "null"}, "minItems": 2})",
      {"[\"a\",null]", "[\"a\",null,null]"}, {"[\"a\"]", "[null,null]"});
  expect_language(R"({"items": [{"type": "boolean"}], "additionalItems": false, "minItems": 1})",
                  {"[true]"}, {"[]", "[true,true]"});
  expect_language(R"({"type": "array", "maxItems": 0})", {"[]"}, {"[1]"});
  // Strict (default, xgrammar's): absent items allow none past prefixItems, but in the bare
  // {"type": "array"}; without strict, any.
  expect_language(R"({"prefixItems": [{"type": "string"}]})", {"[]", "[\"a\"]"}, {"[\"a\",1]"});
  expect_language(R"({"type": "array", "maxItems": 3})", {"[]"}, {"[1]"});
  expect_language(R"({"type": "array", "description": "d"})", {"[]", "[1,[2]]"}, {});
  JsonSchemaOptions loose;
  loose.strict = false;
  expect_language(R"({"prefixItems": [{"type": "string"}]})", {"[\"a\",1]", "[\"a\",{}]"}, {},
                  loose);
  expect_language(R"({"type": "array", "maxItems": 3})", {"[1,2,3]"}, {"[1,2,3,4]"}, loose);
}

TEST(JsonSchema, Combinators) {
  expect_language(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})",
                  {"1", "\"a\""}, {"\"ab\"", "null"});
  expect_language(R"({"oneOf": [{"const": 1}, {"const": 2}]})", {"1", "2"}, {"3"});
  // allOf merges the object parts: properties from both, required unioned.
  expect_language(R"({"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                {"properties": {"b": {"type": "string"}}, "required": ["b"]}]})",
                  {R"({"a":1,"b":"x"})"}, {R"({"a":1})", R"({"b":"x"})"});
  expect_language(R"({"type": "integer", "allOf": [{"minimum": 2}, {"maximum": 4}]})",
                  {"2", "3", "4"}, {"1", "5"});
  // Sibling constraints apply to every anyOf branch.
  expect_language(R"({"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"],
                      "anyOf": [{"properties": {"k": {"minimum": 5}}}, {"properties": {"k": {"maximum": -5}}}]})",
                  {R"({"k":5})", R"({"k":-9})"}, {R"({"k":0})"});
  EXPECT_NE(
      error_of(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})").find("no type in common"),
      std::string::npos);
}

TEST(JsonSchema, RefsAndRecursion) {
  std::string tree =
      R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
      "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
      "$ref": "#/$defs/node"})";
  expect_language(tree, {R"({"v":1})", R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]})"},
                  {R"({"v":1,"kids":[{}]})", R"({"kids":[]})"});
  expect_language(
      R"({"definitions": {"s": {"type": "string"}}, "type": "array", "items": {"$ref": "#/definitions/s"}})",
      {"[\"a\"]"}, {"[1]"});
  expect_language(R"({"type": ["object", "null"], "properties": {"next": {"$ref": "#"}}})",
                  {"null", "{}", R"({"next":{"next":null}})"}, {R"({"next":1})"});
  EXPECT_NE(error_of(R"({"$ref": "#/nope"})").find("does not resolve"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "http://x/y.json"})").find("remote"), std::string::npos);
}

TEST(JsonSchema, UnsupportedKeywordsNameKeywordAndPointer) {
  std::string e = error_of(R"({"properties": {"n": {"type": "number", "multipleOf": 2}}})");
  EXPECT_NE(e.find("'multipleOf'"), std::string::npos) << e;
  EXPECT_NE(e.find("#/properties/n/multipleOf"), std::string::npos) << e;
  for (const char* kw : {"not", "patternProperties", "propertyNames", "if", "contains",
                         "minProperties", "dependentRequired", "unevaluatedProperties"}) {
    std::string schema = str_cat(R"({"items": {")", kw, R"(": {}}})");
    e = error_of(schema);
    EXPECT_NE(e.find(std::string("'") + kw + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("#/items/"), std::string::npos) << e;
  }
  EXPECT_NE(error_of(R"({"uniqueItems": true})").find("uniqueItems"), std::string::npos);
  EXPECT_EQ(error_of(R"({"uniqueItems": false, "title": "t", "description": "d"})"), "");
  EXPECT_NE(error_of(R"({"type": "integer", "minimum": 5, "maximum": 4})").find("no value"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "number", "minimum": 0.5})").find("non-integer"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "pattern": "(a)\\1"})").find("backreference"),
            std::string::npos);
  EXPECT_NE(error_of("{").find("not valid JSON"), std::string::npos);
  // A branch merged with its own ancestor has no $ref rule to close the recursion.
  EXPECT_NE(
      error_of(R"({"type": "object", "anyOf": [{"$ref": "#"}, {"$ref": "#"}]})").find("recursion"),
      std::string::npos);
}

TEST(JsonSchema, Whitespace) {
  std::string s =
      R"({"type": "object", "properties": {"a": {"type": "array"}}, "required": ["a"]})";
  expect_language(s, {R"({"a":[1,2]})", R"({ "a" : [ 1 , 2 ] })"},
                  {"{\"a\":[1,\n2]}", R"({"a":  [1]})", " {\"a\":[]}", "{\"a\":[]} "});
  JsonSchemaOptions any;
  any.any_whitespace = true;
  // xgrammar's any_whitespace: runs of space, tab and newline (no \r) between tokens only.
  expect_language(s, {"{\n  \"a\": [\n    1,\n    2\n  ]\n}", R"({"a":[]})", "{\t\"a\"\t:[ ]}"},
                  {"{\"a\":[]}\n", "{\"a\":[1 2]}", "{\r\n\"a\":[]}", " {\"a\":[]}"}, any);
}

TEST(JsonSchema, StringLengthsCountCharacters) {
  expect_language(R"({"type": "string", "minLength": 2, "maxLength": 3})",
                  {R"("ab")", R"("abc")", "\"\xc3\xa9\xc3\xa9\"", R"("\n\t")", R"("a\u0041")"},
                  {R"("a")", R"("abcd")", "\"\xc3\xa9\""});
}

TEST(JsonSchema, JsonObjectGrammar) {
  RefGrammar g(json_object_gbnf());
  for (const char* s : {"{}", R"({"a":1})", R"({"a": {"b": [1, 2.5, "x", null, true]}})"})
    EXPECT_TRUE(g.accepts(s)) << s;
  for (const char* s : {"[]", "1", "\"{}\"", "{", R"({"a"})", R"({"a":1,})"})
    EXPECT_FALSE(g.accepts(s)) << s;
}

// ---- integer and number bounds against arithmetic ------------------------------------------

TEST(JsonSchema, IntegerBoundsMatchArithmetic) {
  std::mt19937 rng(7);
  std::vector<std::pair<long, long>> cases = {{0, 0},    {-5, 5},      {1, 9},     {10, 99},
                                              {7, 1234}, {-1234, -7},  {-3, 1000}, {99, 100},
                                              {0, 1},    {-100, -100}, {5, 19}};
  for (int k = 0; k < 12; ++k) {
    long a = static_cast<long>(rng() % 2000) - 1000, b = a + static_cast<long>(rng() % 1500);
    cases.emplace_back(a, b);
  }
  for (auto [lo, hi] : cases) {
    RefGrammar g =
        grammar_of(str_cat(R"({"type": "integer", "minimum": )", lo, R"(, "maximum": )", hi, "}"));
    for (long x = lo - 40; x <= hi + 40; x += (hi - lo > 300 ? 7 : 1)) {
      EXPECT_EQ(g.accepts(std::to_string(x)), x >= lo && x <= hi) << lo << ".." << hi << " x=" << x;
    }
    EXPECT_EQ(g.accepts(std::to_string(lo)), true);
    EXPECT_EQ(g.accepts(std::to_string(hi)), true);
  }
  // One-sided and exclusive bounds.
  struct One {
    const char* bounds;
    long lo, hi;
  };
  for (const One& c :
       {One{R"("minimum": 17)", 17, 1L << 40}, One{R"("maximum": -17)", -(1L << 40), -17},
        One{R"("exclusiveMinimum": 9)", 10, 1L << 40},
        One{R"("exclusiveMaximum": 0)", -(1L << 40), -1}, One{R"("minimum": 0)", 0, 1L << 40},
        One{R"("maximum": 250)", -(1L << 40), 250}, One{R"("minimum": 2.5, "maximum": 7.5)", 3, 7},
        One{R"("minimum": 3, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": true)", 4,
            8}}) {
    RefGrammar g = grammar_of(str_cat(R"({"type": "integer", )", c.bounds, "}"));
    for (long x : {-100000L, -1001L, -251L, -18L, -17L, -16L, -1L, 0L,   1L,   3L,    4L,        7L,
                   8L,       9L,     10L,   16L,  17L,  18L,  99L, 250L, 251L, 1000L, 123456789L}) {
      EXPECT_EQ(g.accepts(std::to_string(x)), x >= c.lo && x <= c.hi) << c.bounds << " x=" << x;
    }
  }
}

TEST(JsonSchema, NumberBoundsMatchArithmetic) {
  struct Case {
    const char* bounds;
    double lo;
    bool lo_excl;
    double hi;
    bool hi_excl;
  };
  const double inf = 1e300;
  for (const Case& c :
       {Case{R"("minimum": 0, "maximum": 1)", 0, false, 1, false},
        Case{R"("exclusiveMinimum": 0, "maximum": 10)", 0, true, 10, false},
        Case{R"("minimum": -2, "exclusiveMaximum": 3)", -2, false, 3, true},
        Case{R"("exclusiveMinimum": -5, "exclusiveMaximum": -1)", -5, true, -1, true},
        Case{R"("minimum": 1)", 1, false, inf, false},
        Case{R"("maximum": -1)", -inf, false, -1, false},
        Case{R"("exclusiveMaximum": 0)", -inf, false, 0, true},
        Case{R"("minimum": 4, "maximum": 4)", 4, false, 4, false}}) {
    RefGrammar g = grammar_of(str_cat(R"({"type": "number", )", c.bounds, "}"));
    for (int q = -28; q <= 48; ++q) {
      double x = q / 4.0;
      bool in = (c.lo_excl ? x > c.lo : x >= c.lo) && (c.hi_excl ? x < c.hi : x <= c.hi);
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.2f", x);
      EXPECT_EQ(g.accepts(buf), in) << c.bounds << " x=" << buf;
      if (q % 4 == 0) {
        EXPECT_EQ(g.accepts(std::to_string(q / 4)), in) << c.bounds << " x=" << q / 4;
      }
    }
  }
}

// ---- pattern against std::regex --------------------------------------------------------------

// Every string over `alphabet` up to `max_len` characters.
std::vector<std::string> all_strings(const std::string& alphabet, int max_len) {
  std::vector<std::string> out = {""}, layer = {""};
  for (int len = 1; len <= max_len; ++len) {
    std::vector<std::string> next;
    for (const std::string& s : layer) {
      for (char c : alphabet) next.push_back(s + c);
    }
    out.insert(out.end(), next.begin(), next.end());
    layer = std::move(next);
  }
  return out;
}

TEST(JsonSchema, PatternMatchesStdRegexSearch) {
  const std::string alphabet = "ab1-\"\\";
  std::vector<std::string> strings = all_strings(alphabet, 4);
  for (const char* p : {"^a+$",        "^(a|b1)*$",     "^[a-b]{1,2}-?$",
                        "a1",          "^\\d",          "b$",
                        "^[^a]*$",     "^(?:ab|ba)?1$", "^.{2}$",
                        "^\\w+$",      "^\\D\\S$",      "^[\\d-]+$",
                        "^\"\\\\?$",   "^a{2,}$",       "^(a|)b$",
                        "^[^\"\\\\]$", "^a*?b+?$",      "^\\x61\\u0062$",
                        "^[-a]$",      "^\\-$",         "-"}) {
    RefGrammar g(str_cat("root ::= \"\\\"\" ", regex_to_gbnf(p, true), " \"\\\"\"\n"));
    RefGrammar raw(str_cat("root ::= ", regex_to_gbnf(p, false), "\n"));
    std::regex re(p, std::regex::ECMAScript);
    for (const std::string& s : strings) {
      bool want = std::regex_search(s, re);
      EXPECT_EQ(g.accepts(OJson(s).dump()), want) << "pattern " << p << " on " << s;
      EXPECT_EQ(raw.accepts(s), want) << "raw pattern " << p << " on " << s;
    }
  }
  for (const char* bad :
       {"(?=a)", "(?!a)", "\\b", "a^b", "(a", "a)", "[a", "*a", "a{2,1}", "\\k<x>", "\\q"}) {
    EXPECT_THROW(regex_to_gbnf(bad, true), Error) << bad;
  }
}

// ---- formats against the validator ---------------------------------------------------------

TEST(JsonSchema, FormatsAgreeWithValidator) {
  std::mt19937 rng(11);
  auto pick = [&](const std::string& chars) { return chars[rng() % chars.size()]; };
  // Strings shaped like each format, with characters drawn to be valid and invalid often.
  auto date = [&] {
    std::string y = {pick("0129"), pick("09"), pick("0248"), pick("048")};
    std::string m = {pick("01"), pick("0129")}, d = {pick("0123"), pick("01899")};
    return y + "-" + m + "-" + d;
  };
  auto time = [&] {
    std::string t = {pick("0123"), pick("0349"), ':',         pick("056"),
                     pick("09"),   ':',          pick("056"), pick("09")};
    if (rng() % 2) t += std::string(".") + pick("0123456789");
    return t + (rng() % 2
                    ? std::string("Z")
                    : std::string{pick("+-x"), pick("012"), pick("049"), ':', pick("06"), '0'});
  };
  struct F {
    const char* name;
    std::function<std::string()> gen;
  };
  std::vector<F> formats = {
      {"date", date},
      {"time", time},
      {"date-time", [&] { return date() + (rng() % 8 ? "T" : " ") + time(); }},
      {"uuid",
       [&] {
         std::string s;
         for (int i = 0; i < 36; ++i)
           s += (i == 8 || i == 13 || i == 18 || i == 23) ? (rng() % 20 ? '-' : 'a')
                                                          : (rng() % 64 ? pick("0a9Ffb") : 'g');
         return s;
       }},
      {"ipv4",
       [&] {
         std::string s;
         for (int i = 0; i < 4; ++i) {
           if (i) s += rng() % 20 ? "." : "";
           int n = 1 + rng() % 3;
           for (int k = 0; k < n; ++k) s += pick("0125569");
         }
         return s;
       }},
      {"email",
       [&] {
         std::string s;
         int n = rng() % 12;
         for (int i = 0; i < n; ++i) s += pick("ab.-_@+x1");
         return s + (rng() % 2 ? "@ex.com" : "@x");
       }},
      {"uri",
       [&] {
         std::string s = rng() % 4 ? "https:" : "1x:";
         int n = rng() % 10;
         for (int i = 0; i < n; ++i) s += pick("/a?%2F#[] ");
         return s;
       }},
  };
  for (const F& f : formats) {
    std::string schema = str_cat(R"({"type": "string", "format": ")", f.name, "\"}");
    RefGrammar g = grammar_of(schema);
    nlohmann::json js = nlohmann::json::parse(schema);
    int valid = 0;
    for (int i = 0; i < 400; ++i) {
      std::string s = f.gen();
      bool want = !validate_json_schema(nlohmann::json(s), js);
      valid += want;
      EXPECT_EQ(g.accepts(OJson(s).dump()), want) << f.name << ": " << s;
    }
    EXPECT_GT(valid, 10) << f.name << " generator rarely makes valid strings";
    EXPECT_LT(valid, 390) << f.name << " generator rarely makes invalid strings";
  }
  // Leap years, exactly.
  RefGrammar g = grammar_of(R"({"format": "date"})");
  for (int y : {1900, 2000, 2023, 2024, 2100, 2400, 4, 0, 1996}) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "\"%04d-02-29\"", y);
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    EXPECT_EQ(g.accepts(buf), leap) << buf;
  }
}

}  // namespace
}  // namespace vtllm::structured
