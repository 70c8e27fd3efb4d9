// Random instances drawn from schemas (a generator written here from the keywords' meaning):
// every drawn instance, spaced as the grammar allows, must validate and be accepted by the
// grammar; invalidating mutations must be rejected by both; and any random text edit the
// grammar accepts must be JSON that validates (the grammar never admits an invalid value).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "json_schema_test_gbnf.h"
#include "structured/json_schema.h"
#include "structured/json_schema_validate.h"

namespace vtllm::structured {
namespace {

using OJson = nlohmann::ordered_json;
using testing::RefGrammar;

class Generator {
 public:
  Generator(const OJson& root, uint32_t seed) : root_(root), rng_(seed) {}

  OJson draw(const OJson& s, int depth = 0) {
    if (s.is_boolean()) return OJson(static_cast<int>(rng_() % 10));
    if (s.contains("$ref")) {
      return draw(root_.at(OJson::json_pointer(s["$ref"].get<std::string>().substr(1))), depth + 1);
    }
    if (s.contains("anyOf")) return draw(s["anyOf"][rng_() % s["anyOf"].size()], depth + 1);
    if (s.contains("oneOf")) return draw(s["oneOf"][rng_() % s["oneOf"].size()], depth + 1);
    if (s.contains("const")) return s["const"];
    if (s.contains("enum")) return s["enum"][rng_() % s["enum"].size()];
    std::string type = "null";
    if (s.contains("type")) {
      const OJson& t = s["type"];
      type = t.is_array() ? t[rng_() % t.size()].get<std::string>() : t.get<std::string>();
    } else if (s.contains("properties")) {
      type = "object";
    } else if (s.contains("items")) {
      type = "array";
    }
    if (type == "boolean") return OJson(rng_() % 2 == 0);
    if (type == "integer") return OJson(integer(s));
    if (type == "number") return OJson(number(s));
    if (type == "string") return OJson(string(s));
    if (type == "array") return array(s, depth);
    if (type == "object") return object(s, depth);
    return OJson(nullptr);
  }

 private:
  int64_t integer(const OJson& s) {
    int64_t lo = s.value("minimum", int64_t{-1000}), hi = s.value("maximum", lo + 2000);
    if (s.contains("exclusiveMinimum")) lo = s["exclusiveMinimum"].get<int64_t>() + 1;
    if (s.contains("exclusiveMaximum")) hi = s["exclusiveMaximum"].get<int64_t>() - 1;
    if (!s.contains("minimum") && !s.contains("exclusiveMinimum")) lo = hi - 2000;
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }

  double number(const OJson& s) {
    double lo = s.value("minimum", -50.0), hi = s.value("maximum", lo + 100.0);
    if (!s.contains("minimum")) lo = hi - 100.0;
    // Quarter steps: exact in binary, printed without an exponent.
    int64_t steps = static_cast<int64_t>((hi - lo) * 4);
    return lo + static_cast<double>(rng_() % static_cast<uint64_t>(steps + 1)) / 4.0;
  }

  std::string string(const OJson& s) {
    if (s.contains("format")) {
      auto r = [&] { return static_cast<unsigned>(rng_()); };
      std::string f = s["format"];
      char buf[64];
      if (f == "date") {
        std::snprintf(buf, sizeof(buf), "%04u-%02u-%02u", r() % 10000, 1 + r() % 12, 1 + r() % 28);
      } else if (f == "uuid") {
        std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%04x%08x", r(), r() & 0xFFFF,
                      r() & 0xFFFF, r() & 0xFFFF, r() & 0xFFFF, r());
      } else if (f == "ipv4") {
        std::snprintf(buf, sizeof(buf), "%u.%u.%u.%u", r() % 256, r() % 256, r() % 256, r() % 256);
      } else {
        std::snprintf(buf, sizeof(buf), "user%u@example.org", r() % 1000);
      }
      return buf;
    }
    int min = s.value("minLength", 0), max = s.value("maxLength", min + 8);
    int n = min + static_cast<int>(rng_() % (max - min + 1));
    static const std::vector<std::string> kChars = {
        "a",    "Z",  "0", " ",        "\"",           "\\",
        "\n",   "\t", "/", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
        "\x01", "{",  "]"};
    std::string out;
    for (int i = 0; i < n; ++i) out += kChars[rng_() % kChars.size()];
    return out;
  }

  OJson array(const OJson& s, int depth) {
    int min = s.value("minItems", 0), max = s.value("maxItems", min + (depth > 3 ? 0 : 3));
    int n = min + static_cast<int>(rng_() % (max - min + 1));
    OJson out = OJson::array();
    const OJson items = s.contains("items") ? s["items"] : OJson(true);
    for (int i = 0; i < n; ++i) out.push_back(draw(items, depth + 1));
    return out;
  }

  OJson object(const OJson& s, int depth) {
    OJson out = OJson::object();
    std::vector<std::string> required = s.value("required", std::vector<std::string>{});
    if (s.contains("properties")) {
      for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
        bool req = std::find(required.begin(), required.end(), it.key()) != required.end();
        if (req || (depth < 4 && rng_() % 2)) out[it.key()] = draw(it.value(), depth + 1);
      }
    }
    if (s.contains("additionalProperties") && s["additionalProperties"].is_object() && rng_() % 2) {
      out["extra_" + std::to_string(rng_() % 100)] = draw(s["additionalProperties"], depth + 1);
    }
    return out;
  }

  const OJson& root_;
  std::mt19937 rng_;
};

// Compact JSON with one optional space wherever the default grammar allows one.
std::string spaced(const OJson& v, std::mt19937& rng) {
  auto ws = [&] { return rng() % 3 == 0 ? std::string(" ") : std::string(); };
  if (v.is_object()) {
    std::string out = "{" + ws();
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += "," + ws();
      first = false;
      out += OJson(it.key()).dump() + ws() + ":" + ws() + spaced(it.value(), rng) + ws();
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[" + ws();
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," + ws() : "") + spaced(v[i], rng) + ws();
    return out + "]";
  }
  return v.dump();
}

const char* const kSchemas[] = {
    R"({"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "score": {"type": "number", "minimum": -10, "maximum": 10},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 4},
        "kind": {"enum": ["a", "b", 3, null]},
        "ok": {"type": "boolean"},
        "born": {"type": "string", "format": "date"}},
      "required": ["name", "age", "kind"]})",
    R"({"$defs": {"node": {"type": "object", "properties": {
          "id": {"type": "string", "format": "uuid"},
          "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["id"]}},
      "$ref": "#/$defs/node"})",
    R"({"type": "array", "minItems": 1, "maxItems": 5, "items": {"anyOf": [
        {"type": "integer", "exclusiveMinimum": 10, "exclusiveMaximum": 20},
        {"type": "string", "format": "ipv4"},
        {"type": "object", "properties": {"x": {"type": ["integer", "null"], "maximum": -3}},
         "required": ["x"]}]}})",
    R"({"type": "object", "properties": {"meta": {"type": "object", "properties": {
          "mail": {"type": "string", "format": "email"}}, "required": ["mail"]},
        "count": {"type": "integer"}},
      "required": ["count"], "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}})",
};

TEST(JsonSchemaRandom, DrawnInstancesValidateAndAreAccepted) {
  std::mt19937 rng(2024);
  for (const char* text : kSchemas) {
    OJson schema = OJson::parse(text);
    nlohmann::json plain = nlohmann::json::parse(text);
    std::string gbnf = json_schema_to_gbnf(schema);
    RefGrammar g(gbnf);
    Generator gen(schema, 99);
    for (int i = 0; i < 60; ++i) {
      OJson v = gen.draw(schema);
      std::string s = spaced(v, rng);
      auto violation = validate_json_schema(nlohmann::json::parse(s), plain);
      EXPECT_FALSE(violation) << s << ": " << violation->instance_pointer << " "
                              << violation->message;
      EXPECT_TRUE(g.accepts(s)) << text << "\n" << s << "\n" << gbnf;
    }
  }
}

// Mutations that break an instance in a known way: both must reject the result.
TEST(JsonSchemaRandom, InvalidatingMutationsAreRejectedByBoth) {
  OJson schema = OJson::parse(kSchemas[0]);
  nlohmann::json plain = nlohmann::json::parse(kSchemas[0]);
  RefGrammar g(json_schema_to_gbnf(schema));
  Generator gen(schema, 5);
  std::mt19937 rng(3);
  for (int i = 0; i < 40; ++i) {
    OJson v = gen.draw(schema);
    std::vector<OJson> bad;
    OJson m = v;
    m.erase("name");  // required
    bad.push_back(m);
    m = v;
    m["age"] = "12";  // wrong type
    bad.push_back(m);
    m = v;
    m["age"] = 151;  // above maximum
    bad.push_back(m);
    m = v;
    m["kind"] = "c";  // not in enum
    bad.push_back(m);
    m = v;
    m["name"] = "";  // below minLength
    bad.push_back(m);
    m = v;
    m["tags"] = OJson::array({"a", "b", "c", "d", "e"});  // too many items
    bad.push_back(m);
    m = v;
    m["born"] = "2023-02-29";  // not a date
    bad.push_back(m);
    m = v;
    m["score"] = 10.25;
    bad.push_back(m);
    for (const OJson& b : bad) {
      std::string s = spaced(b, rng);
      EXPECT_TRUE(validate_json_schema(nlohmann::json::parse(s), plain)) << s;
      EXPECT_FALSE(g.accepts(s)) << s;
    }
  }
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

// Random byte edits: whatever the grammar still accepts must parse and validate.
TEST(JsonSchemaRandom, GrammarNeverAcceptsInvalidEdits) {
  std::mt19937 rng(77);
  const std::string noise = "{}[],:\"\\ 0123456789-.eEtrufalsnx";
  for (const char* text : kSchemas) {
    OJson schema = OJson::parse(text);
    nlohmann::json plain = nlohmann::json::parse(text);
    RefGrammar g(json_schema_to_gbnf(schema));
    Generator gen(schema, 123);
    int accepted_edits = 0;
    for (int i = 0; i < 150; ++i) {
      std::string s = spaced(gen.draw(schema), rng);
      int edits = 1 + static_cast<int>(rng() % 2);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        size_t at = rng() % s.size();
        switch (rng() % 3) {
          case 0:
            s.erase(at, 1);
            break;
          case 1:
            s.insert(at, 1, noise[rng() % noise.size()]);
            break;
          default:
            s[at] = noise[rng() % noise.size()];
            break;
        }
      }
      if (!valid_utf8(s) || !g.accepts(s)) continue;
      ++accepted_edits;
      nlohmann::json parsed;
      ASSERT_NO_THROW(parsed = nlohmann::json::parse(s)) << s;
      auto violation = validate_json_schema(parsed, plain);
      EXPECT_FALSE(violation) << text << "\n" << s << ": " << violation->message;
    }
    EXPECT_GT(accepted_edits, 0) << text;
  }
}

}  // namespace
}  // namespace vtllm::structured
