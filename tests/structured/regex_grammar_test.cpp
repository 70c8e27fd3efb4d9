// Regex and choice front ends: the language equals std::regex's (ECMAScript,
// full match) on every short string, unsupported constructs are errors that
// name them, and a choice is exactly its strings.
#include "structured/regex_grammar.h"

#include <gtest/gtest.h>

#include <regex>

#include "base/error.h"
#include "reference_recognizer.h"

namespace vtllm::structured {
namespace {

using testing::all_strings;
using testing::ReferenceRecognizer;

struct RegexCase {
  const char* pattern;
  const char* alphabet;
  size_t max_len;
};

TEST(RegexGrammar, LanguageEqualsStdRegexOnEveryShortString) {
  const RegexCase cases[] = {
      {"a|b*c", "abc", 6},
      {"(ab|a)(c|bc)", "abc", 5},
      {"(?:a|b){2,3}c?", "abc", 6},
      {"[^ab]+a{2}", "abc", 6},
      {"^\\d{1,3}(\\.\\d+)?$", "01.a", 6},
      {"\\w\\W\\s\\S", "a_ .\t", 4},
      {"[\\d\\s]*[a-c-]", "1 b-xz", 4},
      {"a.b", "a\nb", 4},
      {"(a*)*b|c+?", "abc", 6},
      {"[\\]a]|\\]|x{1,}", "a]x", 4},
      {"(|a)(b{0}|c)", "abc", 3},
      {"[\\u0061-\\x63]{2}\\x2d", "abcd-", 4},
      {"a{2,}b{1,2}", "ab", 6},
      {"[.][\\^$|?*+()\\[\\]{}]", ".^$|?*+()[]{}a", 3},
  };
  for (const RegexCase& c : cases) {
    const Grammar g = regex_to_grammar(c.pattern);
    ReferenceRecognizer ref(g);
    const std::regex re(c.pattern, std::regex::ECMAScript);
    int in_language = 0;
    for (const std::string& s : all_strings(c.alphabet, c.max_len)) {
      const bool want = std::regex_match(s, re);
      in_language += want;
      ASSERT_EQ(ref.matches(s), want) << "/" << c.pattern << "/ on '" << s << "'";
    }
    EXPECT_GT(in_language, 0) << c.pattern;
  }
}

TEST(RegexGrammar, DotAndNegatedClassesSpanUtf8) {
  const Grammar dot = regex_to_grammar(".");
  ReferenceRecognizer ref(dot);
  EXPECT_TRUE(ref.matches("\xC3\xA9"));
  EXPECT_TRUE(ref.matches("\xF0\x9F\x98\x80"));
  EXPECT_FALSE(ref.matches("\n"));
  EXPECT_FALSE(ref.matches("\xE2\x80\xA8"));  // U+2028
  EXPECT_FALSE(ref.matches("\xC3"));
  const Grammar neg = regex_to_grammar("[^\\u00e9a]");
  ReferenceRecognizer nref(neg);
  EXPECT_FALSE(nref.matches("\xC3\xA9"));
  EXPECT_TRUE(nref.matches("\xC3\xA8"));
  EXPECT_TRUE(nref.matches("\n"));
  const Grammar pair = regex_to_grammar("\\ud83d\\ude00");
  EXPECT_TRUE(ReferenceRecognizer(pair).matches("\xF0\x9F\x98\x80"));
  // A named group is a group (std::regex has none to compare with).
  const Grammar named = regex_to_grammar("(?<year>\\d{2})-\\d");
  ReferenceRecognizer named_ref(named);
  EXPECT_TRUE(named_ref.matches("19-1"));
  EXPECT_FALSE(named_ref.matches("1-1"));
}

std::string regex_error(const char* pattern) {
  try {
    regex_to_grammar(pattern);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RegexGrammar, UnsupportedConstructsAreNamedErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"(a)\\1", "backreference '\\1' is not supported at offset 3"},
      {"a(?=b)", "lookahead '(?=' is not supported at offset 1"},
      {"a(?!b)", "lookahead '(?!' is not supported at offset 1"},
      {"(?<=a)b", "lookbehind '(?<=' is not supported at offset 0"},
      {"(?<!a)b", "lookbehind '(?<!' is not supported at offset 0"},
      {"a\\bc", "word boundary '\\b' is not supported at offset 1"},
      {"a^b", "anchor '^' inside the pattern is not supported at offset 1"},
      {"a$b", "anchor '$' inside the pattern is not supported at offset 1"},
      {"(?<n>a)\\k<n>", "backreference '\\k' is not supported at offset 7"},
      {"\\p{L}", "Unicode property escape '\\p' is not supported at offset 0"},
      {"a**", "'*' has nothing to repeat at offset 2"},
      {"+a", "'+' has nothing to repeat at offset 0"},
      {"(ab", "unterminated group at offset 0"},
      {"ab)", "unmatched ')' at offset 2"},
      {"[ab", "unterminated character class at offset 0"},
      {"a{3,1}", "repetition {3,1} has max < min at offset 1"},
  };
  for (const auto& [pattern, want] : cases) {
    const std::string got = regex_error(pattern);
    EXPECT_NE(got.find(want), std::string::npos) << pattern << ": " << got;
  }
}

TEST(ChoiceGrammar, MatchesExactlyTheChoices) {
  const std::vector<std::string> choices = {"yes", "no", "n", "", "yes!"};
  const Grammar g = choice_to_grammar(choices);
  ReferenceRecognizer ref(g);
  for (const std::string& s : all_strings("yesno!", 4)) {
    const bool want = std::find(choices.begin(), choices.end(), s) != choices.end();
    ASSERT_EQ(ref.matches(s), want) << s;
  }
  EXPECT_THROW(choice_to_grammar(std::vector<std::string>{}), Error);
}

}  // namespace
}  // namespace vtllm::structured
