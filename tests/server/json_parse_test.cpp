// parse_json against the reference it replaces, nlohmann::json::parse(text,
// nullptr, false): on hand-written edge cases (numbers at every kind's limit,
// escapes, surrogates, UTF-8, whitespace, duplicate keys, deep nesting) and on
// random documents dumped by nlohmann and then mutated, both must agree on
// accept/reject and, when accepted, on the value down to number kinds.
#include "server/json_parse.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "json_identical.h"

namespace vtllm::server {
namespace {

using nlohmann::json;

// The start of a text, for failure messages (some texts are a megabyte).
std::string head(std::string_view text) {
  return std::string(text.substr(0, 120)) + (text.size() > 120 ? "..." : "");
}

// Both parsers agree on `text`. `shallow` (nesting of at most a few thousand)
// also compares with nlohmann's == and dump(), which recurse per level.
void expect_same(std::string_view text, bool shallow = true) {
  const json want = json::parse(text, nullptr, false);
  const std::optional<json> got = parse_json(text);
  ASSERT_EQ(got.has_value(), !want.is_discarded()) << head(text);
  if (!got) return;
  EXPECT_TRUE(json_identical(*got, want)) << head(text);
  if (shallow) {
    EXPECT_EQ(*got, want) << head(text);
    EXPECT_EQ(got->dump(), want.dump()) << head(text);
  }
}

TEST(JsonParse, MatchesNlohmannOnEdgeCases) {
  const std::vector<std::string> cases = {
      // containers, whitespace, literals
      "{}",
      "[]",
      "[[[]]]",
      "[{}]",
      R"({"a":{"b":{"c":[{}]}}})",
      " \t\n\r{ \t\n\r\"a\" \t\n\r: "
      "\t\n\r1 \t\n\r, \"b\" :[ 1 , 2 ,[ ] ] } \t\n\r",
      "true",
      "false",
      "null",
      "[true,false,null]",
      "tru",
      "nul",
      "True",
      "NULL",
      "truex",
      "nullnull",
      "[true false]",
      // structure errors
      "",
      " ",
      "{",
      "}",
      "[",
      "]",
      "[1,]",
      "[,1]",
      "[,]",
      "{,}",
      "{\"a\":1,}",
      "{\"a\"}",
      "{\"a\":}",
      "{\"a\" 1}",
      "{1:2}",
      "{'a':1}",
      "[1 2]",
      "{\"a\":1 \"b\":2}",
      "1 2",
      "{}{}",
      "{} x",
      "[]]",
      "[[]",
      "{\"a\":1}}",
      "\v{}",
      "\f{}",
      "\xC2\xA0{}",
      "/* c */{}",
      "{}//",
      "\"abc",
      "\"abc\\",
      "{\"a\":[1,2}",
      "{\"a\":{]}",
      std::string("[1,\0 2]", 7),
      // nlohmann's lexer takes a NUL outside a string for the end of input
      std::string("{}\0", 3),
      std::string("{}\0garbage", 10),
      std::string("1\0", 2),
      std::string(" \0", 2),
      std::string("\0", 1),
      std::string("[1\0]", 4),
      std::string("\"a\0\"", 4),
      std::string("tr\0ue", 5),
      std::string("{\"a\":1} \0}", 10),
      // numbers: kinds and limits
      "0",
      "-0",
      "0.0",
      "-0.0",
      "1",
      "-1",
      "123456789",
      "18446744073709551615",
      "18446744073709551616",
      "9223372036854775807",
      "9223372036854775808",
      "-9223372036854775808",
      "-9223372036854775809",
      "-18446744073709551616",
      "99999999999999999999999999",
      "-99999999999999999999999999",
      "00000",
      "1E5",
      "1e+5",
      "1e-5",
      "0.1e-5",
      "1.5",
      "-1.5e3",
      "1.5E-3",
      "0e0",
      "0E+0",
      "-0e-0",
      "0e99999",
      "0.000e-99999999999999999999",
      "100e-2",
      "2.2250738585072014e-308",
      "4.9e-324",
      "2.4703282292062328e-324",
      "2.4703282292062327e-324",
      "2e-324",
      "-2e-324",
      "1.7976931348623157e308",
      "1.7976931348623158e308",
      "1.7976931348623159e308",
      "1e400",
      "-1e400",
      "1e-400",
      "-1e-400",
      "1e99999999999999999999",
      "1e-99999999999999999999",
      "0.000001e314",
      "0.000001e313",
      "123456789e-330",
      "123456789e300",
      "0.0000e400",
      "[1e400]",
      "{\"a\":-1e-400}",
      // number syntax errors
      "01",
      "-01",
      "00",
      "+1",
      ".5",
      "1.",
      "-",
      "--1",
      "-a",
      "1e",
      "1e+",
      "1e-",
      "1.e5",
      "1.5e",
      "0x10",
      "1_000",
      "Infinity",
      "-Infinity",
      "NaN",
      "1.5.5",
      "1e5e5",
      "- 1",
      "[-]",
      "[1.]",
      "[01]",
      "0.5x",
      // strings and escapes
      "\"\"",
      "\"abc\"",
      R"("\"\\\/\b\f\n\r\t")",
      R"("\u0000")",
      R"("a\u0000b")",
      R"("\u00e9\u00E9\u20AC")",
      R"("\uD83D\uDE00")",
      R"("\ud83d\ude00")",
      R"("\uD800\uDC00")",
      R"("\uDBFF\uDFFF")",
      R"("\uD83D")",
      R"("\uDE00")",
      R"("\uDE00\uD83D")",
      R"("\uD83Dx")",
      R"("\uD83D\u0041")",
      R"("\uD83D\n")",
      R"("\uD83D\uD83D")",
      R"("\uD83D\u")",
      R"("\uD83D\uDE0")",
      R"("\u12")",
      R"("\u12G4")",
      R"("\u")",
      R"("\x41")",
      R"("\'")",
      R"("\a")",
      R"("\U0041")",
      R"("\ ")",
      "\"a\tb\"",
      "\"\x01\"",
      "\"\x1f\"",
      "\"\x7f\"",
      "\"a\nb\"",
      "\"\xC3\xA9\"",
      "\"\xF0\x9F\x98\x80\"",
      "\"\xEF\xBF\xBF\"",
      "\"\xF4\x8F\xBF\xBF\"",
      // invalid UTF-8 inside strings
      "\"\xC0\x80\"",
      "\"\xC1\xBF\"",
      "\"\xED\xA0\x80\"",
      "\"\xF4\x90\x80\x80\"",
      "\"\xE0\x80\x80\"",
      "\"\xF0\x80\x80\x80\"",
      "\"\xC3\"",
      "\"\x80\"",
      "\"\xF5\x80\x80\x80\"",
      "\"\xE2\x82\"",
      "\"\xFF\"",
      "\"\xC3",
      "\"\xF0\x9F\x98",
      // a byte-order mark counts only at the very start
      "\xEF\xBB\xBF{}",
      "\xEF\xBB\xBF",
      "\xEF\xBB{}",
      " \xEF\xBB\xBF{}",
      "{}\xEF\xBB\xBF",
      "\xEF\xBB\xBF\xEF\xBB\xBF{}",
      // duplicate keys: the last value wins
      R"({"a":1,"a":2})",
      R"({"a":[1,2],"a":{"b":3}})",
      R"({"a":{"x":1},"b":0,"a":"s"})",
      R"({"a":1,"b":2,"a":{"c":[],"c":null}})",
      R"({"":1,"":true})",
  };
  for (const std::string& text : cases) expect_same(text);
}

// Every split of a short string around one special byte, so the 8-byte scan
// meets it at each position of a word and at the end of the text.
TEST(JsonParse, MatchesNlohmannAroundSpecialBytesAtEveryOffset) {
  const std::vector<std::string> specials = {
      "\"",       "\\n",  "\\u00e9",          "\\",   "\x01",         "\x1f",
      "\xC3\xA9", "\xC3", "\xF0\x9F\x98\x80", "\x7f", "\xED\xA0\x80", " "};
  for (size_t len = 0; len < 26; ++len) {
    for (size_t at = 0; at <= len; ++at) {
      for (const std::string& s : specials) {
        const std::string body = std::string(at, 'a') + s + std::string(len - at, 'b');
        expect_same("\"" + body + "\"");
        expect_same("\"" + body);
        expect_same("[\"" + body + "\",1]");
      }
    }
  }
}

TEST(JsonParse, DeepNestingNeedsNoCallStack) {
  constexpr size_t kDepth = 1'000'000;
  expect_same(std::string(kDepth, '['), /*shallow=*/false);
  expect_same(std::string(kDepth, '[') + std::string(kDepth - 1, ']'), false);
  expect_same(std::string(kDepth, '[') + std::string(kDepth, ']'), false);
  std::string objects;
  for (size_t i = 0; i < kDepth / 10; ++i) objects += "{\"a\":";
  expect_same(objects + "1" + std::string(kDepth / 10, '}'), false);
  expect_same(objects + "1" + std::string(kDepth / 10 - 1, '}'), false);
  const std::string shallow = std::string(2000, '[') + "1" + std::string(2000, ']');
  expect_same(shallow);
}

TEST(JsonParse, MatchesNlohmannOnALongBase64String) {
  std::mt19937 rng(7);
  static const char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64(740'000, '=');
  for (size_t i = 0; i + 2 < b64.size(); ++i) b64[i] = kBase64[rng() % 64];
  const std::string body =
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url",)"
      R"("image_url":{"url":"data:image/png;base64,)" +
      b64 + R"("}},{"type":"text","text":"What is this?"}]}],"max_tokens":16})";
  expect_same(body);
  expect_same(body.substr(0, body.size() - 1));
}

// Random JSON values as nlohmann trees: every kind, numbers near their limits,
// strings with escapes, controls, non-ASCII and astral code points.
class RandomValue {
 public:
  explicit RandomValue(uint32_t seed) : rng_(seed) {}

  json value(int depth = 0) {
    switch (rng_() % (depth > 3 ? 6 : 8)) {
      case 0:
        return nullptr;
      case 1:
        return rng_() % 2 == 0;
      case 2:
        return string();
      case 3:
        return integer();
      case 4:
        return floating();
      case 5:
        return string();
      case 6: {
        json a = json::array();
        for (int n = static_cast<int>(rng_() % 5), i = 0; i < n; ++i) a.push_back(value(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        for (int n = static_cast<int>(rng_() % 5), i = 0; i < n; ++i)
          o[string(3)] = value(depth + 1);
        return o;
      }
    }
  }

  // Mutates text by a byte flip, insertion or deletion, 1 to 3 times.
  void mutate(std::string& text) {
    static const char kRaw[] = "\"\\{}[]:,.-+eE0123456789 \t\n\rtfnu\x01\x7f\xC3\xA9\xED\xF0\0";
    static const std::string kBytes(kRaw, sizeof kRaw - 1);  // the NUL included
    for (int n = 1 + static_cast<int>(rng_() % 3), i = 0; i < n; ++i) {
      const size_t at = text.empty() ? 0 : rng_() % (text.size() + 1);
      switch (rng_() % 3) {
        case 0:
          if (at < text.size()) text[at] = static_cast<char>(text[at] ^ (1 << (rng_() % 8)));
          break;
        case 1:
          text.insert(text.begin() + static_cast<ptrdiff_t>(at), kBytes[rng_() % kBytes.size()]);
          break;
        default:
          if (at < text.size()) text.erase(at, 1);
          break;
      }
    }
  }

  std::mt19937& rng() { return rng_; }

 private:
  json integer() {
    const int bits = static_cast<int>(rng_() % 65);
    const uint64_t u = bits == 0 ? 0 : (uint64_t{rng_()} << 32 | rng_()) >> (64 - bits);
    if (rng_() % 2 == 0) return u;
    return static_cast<int64_t>(u);  // negative where the top bit is set
  }

  json floating() {
    switch (rng_() % 3) {
      case 0: {  // any finite bit pattern: subnormals, huge and tiny values
        double d;
        do {
          d = std::bit_cast<double>(uint64_t{rng_()} << 32 | rng_());
        } while (!std::isfinite(d));
        return d;
      }
      case 1:
        return std::ldexp(static_cast<double>(static_cast<int32_t>(rng_())),
                          -static_cast<int>(rng_() % 40));
      default:
        return static_cast<double>(rng_() % 1000) / 8.0 - 50.0;
    }
  }

  std::string string(size_t max_len = 12) {
    std::string s;
    for (size_t n = rng_() % (max_len + 1), i = 0; i < n; ++i) {
      switch (rng_() % 6) {
        case 0:  // controls, quote, backslash, slash: escaped by dump()
          s += "\"\\/\b\f\n\r\t\x01\x1f"[rng_() % 10];
          break;
        case 1: {
          uint32_t cp = 0x80 + rng_() % 0x10FF80;
          if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xE9;
          // Reuse nlohmann's own UTF-8 writer through a \u escape round trip.
          char buf[16];
          if (cp < 0x10000) {
            std::snprintf(buf, sizeof buf, "\"\\u%04x\"", cp);
          } else {
            const uint32_t v = cp - 0x10000;
            std::snprintf(buf, sizeof buf, "\"\\u%04x\\u%04x\"", 0xD800 + (v >> 10),
                          0xDC00 + (v & 0x3FF));
          }
          s += json::parse(buf).get<std::string>();
          break;
        }
        default:
          s += static_cast<char>('a' + rng_() % 26);
          break;
      }
    }
    return s;
  }

  std::mt19937 rng_;
};

TEST(JsonParse, MatchesNlohmannOnRandomAndMutatedDocuments) {
  RandomValue gen(20240611);
  for (int i = 0; i < 4000; ++i) {
    const json v = gen.value();
    const int indent = static_cast<int>(gen.rng()() % 3) - 1;  // -1 compact, 0 and 1 newlines
    const bool ascii = gen.rng()() % 2 == 0;                   // \uXXXX (surrogate pairs) or raw
    std::string text = v.dump(indent, ' ', ascii);
    expect_same(text);
    gen.mutate(text);
    expect_same(text);
  }
}

}  // namespace
}  // namespace vtllm::server
