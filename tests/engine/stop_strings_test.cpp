#include "engine/stop_strings.h"

#include <gtest/gtest.h>

namespace vtllm::engine {
namespace {

// Feeds pieces; returns the concatenation of everything emitted (add + final flush).
std::string feed(StopStringMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.add(p);
  if (!m.matched()) out += m.flush();
  return out;
}

TEST(StopStrings, MatchSpanningPiecesTruncatesBeforeTheStop) {
  StopStringMatcher m({"END"}, false);
  EXPECT_EQ(feed(m, {"hello E", "N", "D and more"}), "hello ");
  EXPECT_EQ(m.matched(), "END");
  EXPECT_EQ(m.text(), "hello ");
}

TEST(StopStrings, IncludedStopStaysInTheOutput) {
  StopStringMatcher m({"END"}, true);
  EXPECT_EQ(feed(m, {"abcEN", "Dxyz"}), "abcEND");
}

TEST(StopStrings, EarliestOfSeveralStopsWins) {
  StopStringMatcher m({"world", "o w"}, false);
  EXPECT_EQ(feed(m, {"hello world"}), "hell");
  EXPECT_EQ(m.matched(), "o w");
}

TEST(StopStrings, HoldsBackOnlyWhatCouldStartAStop) {
  StopStringMatcher m({"STOP"}, false);
  EXPECT_EQ(m.add("abcdef"), "abc");  // the last |STOP| - 1 = 3 characters are held back
  EXPECT_EQ(m.add("g"), "d");
  EXPECT_EQ(m.flush(), "efg");
  EXPECT_FALSE(m.matched());
}

TEST(StopStrings, NoMatchEmitsEverythingInOrder) {
  StopStringMatcher m({"zz", "qqq"}, false);
  const std::vector<std::string> pieces = {"a", "z", "b", "qq", "c", "", "z"};
  EXPECT_EQ(feed(m, pieces), "azbqqcz");
}

TEST(StopStrings, PieceAfterAMatchIsIgnored) {
  StopStringMatcher m({"x"}, false);
  EXPECT_EQ(m.add("abxcd"), "ab");
  EXPECT_EQ(m.add("more"), "");
  EXPECT_EQ(m.flush(), "");
}

}  // namespace
}  // namespace vtllm::engine
