// StopStringMatcher: what it emits must equal a brute-force search of the whole
// text at each chunk boundary, with vLLM's rule (the first listed stop that a
// chunk completes wins).
#include "text/stop_strings.h"

#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "text/utf8.h"

namespace vtllm::text {
namespace {

// Feeds pieces; returns the concatenation of everything emitted (push + final flush).
std::string feed(StopStringMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.push(p).text;
  if (!m.matched()) out += m.flush();
  return out;
}

// The brute-force answer, given where the chunks end: at the first chunk end
// that some stop's first occurrence fits before, the first listed such stop.
std::pair<std::string, int> first_stop(const std::string& text, const std::vector<size_t>& ends,
                                       const std::vector<std::string>& stops, bool include) {
  for (size_t e : ends) {
    for (size_t k = 0; k < stops.size(); ++k) {
      const size_t p = text.find(stops[k]);
      if (p != std::string::npos && p + stops[k].size() <= e)
        return {text.substr(0, p + (include ? stops[k].size() : 0)), static_cast<int>(k)};
    }
  }
  return {text, -1};
}

TEST(StopStringMatcher, MatchesBruteForceOnRandomChunkings) {
  std::mt19937 rng(99);
  const std::string alphabet = "ab\xC3\xA9 ";  // 'a', 'b', U+00E9, space
  auto random_text = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      const int k = rng() % 4;
      s += k == 2 ? alphabet.substr(2, 2) : std::string(1, alphabet[k == 3 ? 4 : k]);
    }
    return s;
  };
  int stopped_runs = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const std::string text = random_text(1 + rng() % 30);
    std::vector<std::string> stops;
    for (int k = 0, n = 1 + rng() % 3; k < n; ++k) stops.push_back(random_text(1 + rng() % 4));
    const bool include = trial % 2 == 1;
    // Cut at character boundaries only, as the detokenizer does.
    std::vector<size_t> ends;
    for (size_t i = 0; i < text.size();) {
      size_t j = std::min(text.size(), i + 1 + rng() % 6);
      while (j < text.size() && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80) ++j;
      ends.push_back(j);
      i = j;
    }
    const auto [expect, which] = first_stop(text, ends, stops, include);
    StopStringMatcher m(stops, include);
    std::string got;
    std::optional<size_t> stopped;
    for (size_t c = 0, i = 0; c < ends.size() && !stopped; i = ends[c++]) {
      StopStringMatcher::Output o = m.push(std::string_view(text).substr(i, ends[c] - i));
      EXPECT_TRUE(is_valid_utf8(o.text)) << "split a character";
      got += o.text;
      EXPECT_EQ(expect.compare(0, got.size(), got), 0) << "emitted text past a stop";
      stopped = o.stopped;
    }
    if (!stopped) got += m.flush();
    EXPECT_EQ(got, expect) << "text '" << text << "'";
    EXPECT_EQ(stopped ? static_cast<int>(*stopped) : -1, which);
    EXPECT_EQ(m.matched() != nullptr, stopped.has_value());
    stopped_runs += stopped.has_value();
  }
  EXPECT_GT(stopped_runs, 200);  // the random cases do exercise stopping
}

TEST(StopStringMatcher, MatchSpanningPiecesTruncatesBeforeTheStop) {
  StopStringMatcher m({"END"}, false);
  EXPECT_EQ(feed(m, {"hello E", "N", "D and more"}), "hello ");
  ASSERT_NE(m.matched(), nullptr);
  EXPECT_EQ(*m.matched(), "END");
}

TEST(StopStringMatcher, IncludedStopStaysInTheOutput) {
  StopStringMatcher m({"END"}, true);
  EXPECT_EQ(feed(m, {"abcEN", "Dxyz"}), "abcEND");
}

TEST(StopStringMatcher, IncludeStopKeepsTheStopStringAndHoldsNothingBack) {
  StopStringMatcher m({"</answer>", "STOP"}, true);
  // Nothing before a stop's end is ever cut, so nothing needs holding back (as vLLM).
  EXPECT_EQ(m.push("the answer is 4</ans").text, "the answer is 4</ans");
  const StopStringMatcher::Output o = m.push("wer> trailing");
  EXPECT_EQ(o.text, "wer>");
  ASSERT_TRUE(o.stopped.has_value());
  EXPECT_EQ(*o.stopped, 0u);
  EXPECT_EQ(m.push("more").text, "");
}

TEST(StopStringMatcher, StopCompletedInAnEarlierPieceWins) {
  StopStringMatcher m({"world", "o w"}, false);
  EXPECT_EQ(feed(m, {"hello wo", "rld"}), "hell");
  EXPECT_EQ(*m.matched(), "o w");
}

TEST(StopStringMatcher, FirstListedStopWinsWithinOnePiece) {
  // vLLM's check_stop_strings tries the stops in order on each step's new text.
  StopStringMatcher m({"world", "o w"}, false);
  EXPECT_EQ(feed(m, {"hello world"}), "hello ");
  EXPECT_EQ(*m.matched(), "world");
}

TEST(StopStringMatcher, HoldsBackOnlyWhatCouldStartAStop) {
  StopStringMatcher m({"STOP"}, false);
  EXPECT_EQ(m.push("abcdef").text, "abcdef");  // no tail of it begins "STOP"
  EXPECT_EQ(m.push("gST").text, "g");
  EXPECT_EQ(m.push("O").text, "");
  EXPECT_EQ(m.push("x").text, "STOx");
  EXPECT_EQ(m.push("S").text, "");
  EXPECT_EQ(m.flush(), "S");
  EXPECT_EQ(m.matched(), nullptr);
}

TEST(StopStringMatcher, NoMatchEmitsEverythingInOrder) {
  StopStringMatcher m({"zz", "qqq"}, false);
  const std::vector<std::string> pieces = {"a", "z", "b", "qq", "c", "", "z"};
  EXPECT_EQ(feed(m, pieces), "azbqqcz");
}

TEST(StopStringMatcher, PieceAfterAMatchIsIgnored) {
  StopStringMatcher m({"x"}, false);
  EXPECT_EQ(m.push("abxcd").text, "ab");
  EXPECT_EQ(m.push("more").text, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStringMatcher, RejectsAnEmptyStop) { EXPECT_THROW(StopStringMatcher({"a", ""}), Error); }

}  // namespace
}  // namespace vtllm::text
