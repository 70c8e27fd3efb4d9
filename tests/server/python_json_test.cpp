// python_json_dumps_prefix against the whole-text reference (nlohmann parse, then
// python_json_dumps): on random JSON texts with random spacing and escapes, every
// prefix settles a prefix of the whole dump, growing with the text, and the whole text
// settles all of it; broken texts are found invalid. hermes_body_prefix reads a call's
// name and arguments from the start of its body.
#include "server/python_json.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>

namespace vtllm::server {
namespace {

using OJson = nlohmann::ordered_json;

// Random JSON text: random values, spacing and string spellings (raw UTF-8, \uXXXX
// escapes, surrogate pairs, short escapes); no duplicate keys.
class RandomJson {
 public:
  explicit RandomJson(uint32_t seed) : rng_(seed) {}

  std::string value(int depth = 0) {
    switch (depth > 3 ? rng_() % 4 : rng_() % 6) {
      case 0:
        return string();
      case 1:
        return number();
      case 2: {
        static const char* const kLit[] = {"true", "false", "null"};
        return kLit[rng_() % 3];
      }
      case 3:
        return string();
      case 4: {
        std::string s = "[" + ws();
        for (int n = int(rng_() % 4), i = 0; i < n; ++i)
          s += (i ? "," + ws() : "") + value(depth + 1) + ws();
        return s + "]";
      }
      default: {
        std::string s = "{" + ws();
        for (int n = int(rng_() % 4), i = 0; i < n; ++i)
          s += (i ? "," + ws() : "") + string(str_key(i)) + ws() + ":" + ws() + value(depth + 1) +
               ws();
        return s + "}";
      }
    }
  }

  std::string ws() {
    static const char* const kWs[] = {"", "", " ", "\n  ", "\t", "\r\n"};
    return kWs[rng_() % 6];
  }

 private:
  // Keys differ in their first character (the parse keeps one of duplicate keys).
  static std::string str_key(int i) { return std::string(1, char('a' + i)); }

  std::string string(const std::string& head = "") {
    static const char* const kPieces[] = {"a",
                                          "Z",
                                          " ",
                                          "\xc3\xa9",
                                          "\xe2\x82\xac",
                                          "\xf0\x9f\x98\x80",
                                          "\\u00e9",
                                          "\\u20AC",
                                          "\\ud83d\\ude00",
                                          "\\n",
                                          "\\t",
                                          "\\\"",
                                          "\\\\",
                                          "\\/",
                                          "\\u0001",
                                          "\\b",
                                          "</tool_call",
                                          "{"};
    std::string s = "\"" + head;
    for (int n = int(rng_() % 6); n > 0; --n) s += kPieces[rng_() % 18];
    return s + "\"";
  }

  std::string number() {
    static const char* const kNum[] = {
        "0", "-0", "7", "-12", "3.25", "1e2", "-2.5E-3", "1E+2", "123456789012", "0.1", "1e400"};
    return kNum[rng_() % 11];
  }

  std::mt19937 rng_;
};

TEST(PythonJson, EveryPrefixSettlesAPrefixOfTheWholeDump) {
  int checked = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    RandomJson gen(seed);
    const std::string text = gen.value() + gen.ws();
    OJson v;
    try {
      v = OJson::parse(text);
    } catch (const OJson::exception&) {
      continue;  // 1e400 and friends: not a value nlohmann reads
    }
    const std::string whole = python_json_dumps(v);
    std::string last;
    for (size_t n = 0; n <= text.size(); ++n) {
      const JsonDumpPrefix p = python_json_dumps_prefix(std::string_view(text).substr(0, n));
      ASSERT_FALSE(p.invalid) << n << ": " << text;
      ASSERT_TRUE(whole.starts_with(p.settled)) << n << ": " << p.settled << " vs " << whole;
      ASSERT_TRUE(p.settled.starts_with(last)) << n << ": " << text;
      last = p.settled;
      if (p.complete) {
        EXPECT_EQ(p.settled, whole) << text;
      }
    }
    const JsonDumpPrefix all = python_json_dumps_prefix(text);
    // A bare number is complete only once something follows it.
    EXPECT_TRUE(all.complete || v.is_number()) << text;
    EXPECT_TRUE(python_json_dumps_prefix(text + " ").complete) << text;
    EXPECT_EQ(python_json_dumps_prefix(text + " ").settled, whole) << text;
    ++checked;
  }
  EXPECT_GT(checked, 250);
}

TEST(PythonJson, BrokenTextsAreInvalid) {
  for (const char* bad :
       {"{\"a\" 1}", "[1 2]", "tru3", "\"\\x\"", "\"\\udc00\"", "\"\\ud83dx\"", "{1: 2}", "[1,]x",
        "\"\x01\"", "\"\xff\"", "01 ", "-x", "\"\xed\xa0\x80\"", "nul1", "}"}) {
    EXPECT_TRUE(OJson::parse(bad, nullptr, false).is_discarded()) << bad;
    EXPECT_TRUE(python_json_dumps_prefix(bad).invalid) << bad;
  }
  // Nesting past the depth limit settles nothing deeper, and is not invalid.
  const std::string deep(600, '[');
  const JsonDumpPrefix d = python_json_dumps_prefix(deep);
  EXPECT_FALSE(d.invalid);
  EXPECT_EQ(d.settled, std::string(512, '['));
}

TEST(PythonJson, HermesBodyPrefixReadsNameAndArguments) {
  const std::string body =
      " {\"id\": [1, {\"x\": null}], \"arguments\": {\"q\": \"caf\\u00e9\", \"n\": 1e2},"
      " \"name\": \"lookup\"}";
  HermesBodyPrefix last;
  for (size_t n = 0; n <= body.size(); ++n) {
    const HermesBodyPrefix p = hermes_body_prefix(std::string_view(body).substr(0, n));
    ASSERT_FALSE(p.invalid) << n;
    if (last.arguments) {
      ASSERT_TRUE(p.arguments);
      EXPECT_TRUE(p.arguments->starts_with(*last.arguments)) << n;
    }
    last = p;
  }
  EXPECT_EQ(last.name, "lookup");
  EXPECT_EQ(last.arguments, "{\"q\": \"caf\xc3\xa9\", \"n\": 100.0}");
  EXPECT_EQ(last.arguments, python_json_dumps(OJson::parse(body)["arguments"]));
  EXPECT_TRUE(hermes_body_prefix("[1]").invalid);
  EXPECT_TRUE(hermes_body_prefix("{\"name\": 3}").invalid);
  EXPECT_FALSE(hermes_body_prefix("{\"na").name);
  EXPECT_FALSE(hermes_body_prefix("{\"name\": \"f").name);
}

}  // namespace
}  // namespace vtllm::server
