// IncrementalDetokenizer and StopStringMatcher: streamed output must equal the
// one-shot decode / a brute-force search over the whole text.
#include <gtest/gtest.h>

#include <random>

#include "text/detokenizer.h"
#include "text/stop_strings.h"
#include "text/utf8.h"
#include "tokenizer_test_util.h"

namespace vtllm::text::testing {
namespace {

std::string stream_all(const Tokenizer& tok, const std::vector<TokenId>& ids, bool skip) {
  IncrementalDetokenizer detok(tok, skip);
  std::string out;
  for (TokenId id : ids) {
    const std::string chunk = detok.push(id);
    EXPECT_TRUE(is_valid_utf8(chunk));
    out += chunk;
  }
  const std::string tail = detok.finish();
  EXPECT_TRUE(is_valid_utf8(tail));
  return out + tail;
}

class Detokenizer : public ::testing::TestWithParam<const char*> {};

TEST_P(Detokenizer, StreamedCorpusEqualsOneShotDecode) {
  const Tokenizer tok = Tokenizer::from_file(real_tokenizer_json(GetParam()));
  for (const CorpusCase& c : corpus()) {
    const std::vector<TokenId> ids = tok.encode(c.text, true);
    EXPECT_EQ(stream_all(tok, ids, false), tok.decode(ids, false)) << c.name;
    EXPECT_EQ(stream_all(tok, ids, true), tok.decode(ids, true)) << c.name;
  }
}

TEST_P(Detokenizer, RandomIdsStreamToValidUtf8EqualToDecode) {
  const Tokenizer tok = Tokenizer::from_file(real_tokenizer_json(GetParam()));
  std::mt19937 rng(1234);
  // Low ids are the single-byte tokens in these vocabularies: partial characters abound.
  std::uniform_int_distribution<TokenId> low(0, 600), any(0, static_cast<TokenId>(tok.id_end()) - 1);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<TokenId> ids(1 + rng() % 40);
    for (TokenId& id : ids) id = rng() % 3 ? low(rng) : any(rng);
    EXPECT_EQ(stream_all(tok, ids, trial % 2 == 0), tok.decode(ids, trial % 2 == 0));
  }
}

INSTANTIATE_TEST_SUITE_P(Hf, Detokenizer, ::testing::Values("qwen3", "gemma3", "llama3_1"));

TEST(IncrementalDetokenizer, HoldsBackAPartialCharacter) {
  const Tokenizer tok = Tokenizer::from_file(real_tokenizer_json("qwen3"));
  const std::vector<TokenId> ids = tok.encode("x\xF0\x9F\xA6\x9C", false);  // x + U+1F99C parrot
  ASSERT_GE(ids.size(), 3u) << "expected the parrot to need several byte tokens";
  IncrementalDetokenizer detok(tok, false);
  EXPECT_EQ(detok.push(ids[0]), "x");
  std::string held;
  for (size_t i = 1; i + 1 < ids.size(); ++i) held += detok.push(ids[i]);
  EXPECT_EQ(held, "");
  EXPECT_EQ(detok.push(ids.back()), "\xF0\x9F\xA6\x9C");
  EXPECT_EQ(detok.finish(), "");
}

TEST(IncrementalDetokenizer, FinishRendersAnUnfinishedCharacterAsDecodeDoes) {
  const Tokenizer tok = Tokenizer::from_file(real_tokenizer_json("qwen3"));
  std::vector<TokenId> ids = tok.encode("\xF0\x9F\xA6\x9C", false);
  ASSERT_GE(ids.size(), 2u);
  ids.pop_back();
  IncrementalDetokenizer detok(tok, false);
  std::string out;
  for (TokenId id : ids) out += detok.push(id);
  EXPECT_EQ(out, "");
  EXPECT_EQ(detok.finish(), tok.decode(ids));
  EXPECT_EQ(tok.decode(ids), kReplacementChar);
}

// The brute-force answer over the whole text: the text before the stop whose
// first occurrence ends earliest (longer, then listed first, on ties).
std::pair<std::string, int> first_stop(const std::string& text, const std::vector<std::string>& stops) {
  size_t best_end = std::string::npos, best_start = std::string::npos;
  int which = -1;
  for (size_t k = 0; k < stops.size(); ++k) {
    const size_t p = text.find(stops[k]);
    if (p == std::string::npos) continue;
    const size_t e = p + stops[k].size();
    if (e < best_end || (e == best_end && p < best_start)) {
      best_end = e;
      best_start = p;
      which = static_cast<int>(k);
    }
  }
  return {which < 0 ? text : text.substr(0, best_start), which};
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
    const auto [expect, which] = first_stop(text, stops);
    StopStringMatcher m(stops);
    std::string got;
    std::optional<size_t> stopped;
    // Cut at character boundaries only, as the detokenizer does.
    for (size_t i = 0; i < text.size() && !stopped;) {
      size_t j = std::min(text.size(), i + 1 + rng() % 6);
      while (j < text.size() && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80) ++j;
      StopStringMatcher::Output o = m.push(std::string_view(text).substr(i, j - i));
      got += o.text;
      EXPECT_EQ(expect.compare(0, got.size(), got), 0) << "emitted text past a stop";
      stopped = o.stopped;
      i = j;
    }
    if (!stopped) got += m.flush();
    EXPECT_EQ(got, expect) << "text '" << text << "'";
    EXPECT_EQ(stopped ? static_cast<int>(*stopped) : -1, which);
    stopped_runs += stopped.has_value();
  }
  EXPECT_GT(stopped_runs, 200);  // the random cases do exercise stopping
}

TEST(StopStringMatcher, IncludeStopKeepsTheStopString) {
  StopStringMatcher m({"</answer>", "STOP"}, true);
  EXPECT_EQ(m.push("the answer is 4</ans").text, "the answer is 4");
  const StopStringMatcher::Output o = m.push("wer> trailing");
  EXPECT_EQ(o.text, "</answer>");
  ASSERT_TRUE(o.stopped.has_value());
  EXPECT_EQ(*o.stopped, 0u);
  EXPECT_EQ(m.push("more").text, "");
}

}  // namespace
}  // namespace vtllm::text::testing
