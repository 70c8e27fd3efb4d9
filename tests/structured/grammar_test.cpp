// GBNF parsing: errors name line:column, and parsed grammars mean what the
// equivalent std::regex means (checked by the reference recogniser over every
// short string) and what the UTF-8 class expansion claims (over code points).
#include "structured/grammar.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "base/error.h"
#include "reference_recognizer.h"
#include "structured/json_gbnf.h"
#include "text/utf8.h"

namespace vtllm::structured {
namespace {

using testing::all_strings;
using testing::ReferenceRecognizer;

std::string parse_error(std::string_view text) {
  try {
    parse_gbnf(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gbnf, ErrorsNameLineAndColumn) {
  EXPECT_EQ(parse_error("root ::= \"a\"\nx ::= [a-"), "gbnf:2:7: unterminated character class");
  EXPECT_EQ(parse_error("root ::= \"abc"), "gbnf:1:14: unterminated string literal");
  EXPECT_EQ(parse_error("root ::= a\n"), "gbnf:1:10: undefined rule 'a'");
  EXPECT_EQ(parse_error("a ::= \"x\"\n"), "gbnf: no rule named 'root' (the start rule)");
  EXPECT_EQ(parse_error("root ::= \"x\"\nroot ::= \"y\""),
            "gbnf:2:1: rule 'root' is defined twice");
  EXPECT_EQ(parse_error("root ::= * \"x\""), "gbnf:1:10: '*' has nothing to repeat");
  EXPECT_EQ(parse_error("root := \"x\""), "gbnf:1:6: expected '::=' after rule name 'root'");
  EXPECT_EQ(parse_error("root ::= (\"x\""), "gbnf:1:14: expected ')'");
  EXPECT_EQ(parse_error("root ::= \"\\q\""), "gbnf:1:11: unknown escape '\\q'");
  EXPECT_EQ(parse_error("root ::= [z-a]"), "gbnf:1:10: character class range is backwards");
  EXPECT_EQ(parse_error("root ::= \"a\"{3,2}"), "gbnf:1:13: repetition {3,2} has max < min");
  EXPECT_EQ(parse_error("root ::= \"\\u12\""), "gbnf:1:11: escape needs 4 hex digits");
  EXPECT_EQ(parse_error("root ::= \"a\" )"), "gbnf:1:14: unexpected ')'");
}

TEST(Gbnf, AcceptsJsonGrammarWithCommentsAndContinuations) {
  const Grammar g = parse_gbnf(kJsonGbnf);
  ReferenceRecognizer ref(g);
  for (std::string_view ok : {"{}", " [1, -2.5e3, \"a\\u00e9\\n\", true, null, {\"k\": []}] ",
                              "\"\xC3\xA9\"", "0", "{\"a\":{\"b\":[false]}}"}) {
    EXPECT_TRUE(ref.matches(ok)) << ok;
  }
  for (std::string_view bad : {"{", "01", "[1,]", "\"\x01\"", "tru", "{\"a\" 1}", "\"\\x\""}) {
    EXPECT_FALSE(ref.matches(bad)) << bad;
  }
  const Grammar g2 = parse_gbnf(R"(
# a comment line
root ::= item ( "," item )*   # trailing comment
item ::=
  "x" |
  ( "y"
    "z" )
)");
  ReferenceRecognizer ref2(g2);
  EXPECT_TRUE(ref2.matches("x,yz,x"));
  EXPECT_FALSE(ref2.matches("y,z"));
}

// Each GBNF next to the std::regex with the same language over `alphabet`.
struct Equivalent {
  const char* gbnf;
  const char* regex;
  const char* alphabet;
  size_t max_len;
};

TEST(Gbnf, LanguageEqualsEquivalentRegexOnEveryShortString) {
  const Equivalent cases[] = {
      {R"(root ::= "ab" | "a" [b-c]*)", "ab|a[b-c]*", "abc", 6},
      {R"(root ::= ("a" | "bc")+ "c"?)", "(a|bc)+c?", "abc", 7},
      {R"(root ::= [^a]{2,3} "a"{1,})", "[^a]{2,3}a{1,}", "abc", 7},
      {R"(root ::= x{2} y
x ::= "a" | "b" "b"
y ::= "c"{0,2})",
       "(a|bb){2}c{0,2}", "abc", 7},
      {R"(root ::= "a" root "b" | "")", "|ab|aabb|aaabbb|aaaabbbb", "ab", 8},
      {R"(root ::= ( "a"* "b"* )* "c")", "(a*b*)*c", "abc", 6},
      {R"(root ::= . "." [\x61-\x62] "\x63"? [\]\[\-])", ".\\.[a-b]c?[\\]\\[-]", "ab.c[]-", 5},
      {R"(root ::= ("ab"){0,2} "b"{3})", "(ab){0,2}b{3}", "ab", 9},
  };
  for (const Equivalent& c : cases) {
    const Grammar g = parse_gbnf(c.gbnf);
    ReferenceRecognizer ref(g);
    const std::regex re(c.regex);
    int in_language = 0;
    for (const std::string& s : all_strings(c.alphabet, c.max_len)) {
      const bool want = std::regex_match(s, re);
      in_language += want;
      ASSERT_EQ(ref.matches(s), want) << c.gbnf << " on '" << s << "'";
    }
    EXPECT_GT(in_language, 0) << c.gbnf;
  }
}

TEST(Gbnf, CodepointClassesMatchUtf8OfTheirCodepoints) {
  std::mt19937 rng(7);
  auto random_cp = [&] {
    // Mostly near the UTF-8 length boundaries, where the splitting is subtle.
    static const char32_t kEdges[] = {0x7F, 0x7FF, 0xFFFF, 0xD7FF, 0xE000, 0x10FFFF, 0x10000};
    if (rng() % 2) {
      const char32_t e = kEdges[rng() % std::size(kEdges)];
      const char32_t cp = e + (rng() % 5) - 2;
      return std::min<char32_t>(cp, 0x10FFFF);
    }
    return static_cast<char32_t>(rng() % 0x110000);
  };
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<CodepointRange> ranges;
    for (int k = 0; k < 3; ++k) {
      char32_t a = random_cp(), b = random_cp();
      if (a > b) std::swap(a, b);
      ranges.push_back({a, b});
    }
    const bool negated = trial % 2;
    Grammar g;
    g.root = g.add_rule("root");
    const Element cls = g.codepoint_class(ranges, negated, "cls");  // adds rules: call first
    g.rules[0].alternatives.push_back({cls});
    ReferenceRecognizer ref(g);
    for (int i = 0; i < 300; ++i) {
      const char32_t cp = random_cp();
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      bool in = false;
      for (auto [lo, hi] : ranges) in |= lo <= cp && cp <= hi;
      std::string s;
      text::utf8_append(s, cp);
      ASSERT_EQ(ref.matches(s), in != negated)
          << std::hex << "U+" << static_cast<uint32_t>(cp) << " trial " << trial;
    }
    // Byte strings that are not one valid UTF-8 character never match.
    for (int i = 0; i < 300; ++i) {
      std::string s(1 + rng() % 4, '\0');
      for (char& ch : s) ch = static_cast<char>(rng() % 256);
      if (text::utf8_valid_len(s, 0) == s.size()) continue;
      ASSERT_FALSE(ref.matches(s));
    }
  }
}

}  // namespace
}  // namespace vtllm::structured
