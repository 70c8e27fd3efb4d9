// IncrementalDetokenizer: streamed output must equal the one-shot decode.
#include "text/detokenizer.h"

#include <gtest/gtest.h>

#include <random>

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
  std::uniform_int_distribution<TokenId> low(0, 600),
      any(0, static_cast<TokenId>(tok.id_end()) - 1);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<TokenId> ids(1 + rng() % 40);
    for (TokenId& id : ids) id = rng() % 3 ? low(rng) : any(rng);
    EXPECT_EQ(stream_all(tok, ids, trial % 2 == 0), tok.decode(ids, trial % 2 == 0));
  }
}

INSTANTIATE_TEST_SUITE_P(Hf, Detokenizer, ::testing::Values("qwen3", "gemma3", "llama3_1"));

// is_valid_utf8 reads ASCII eight bytes at a time: a bad or multi-byte sequence at every
// offset of a long ASCII run, and one cut at the end, are judged as byte by byte.
TEST(Utf8, ValidityDoesNotDependOnWhereASequenceFallsInTheAsciiRun) {
  for (size_t at = 0; at < 40; ++at) {
    std::string s(40, 'a');
    EXPECT_TRUE(is_valid_utf8(s));
    s.insert(at, "\xc3\xa9");  // U+00E9
    EXPECT_TRUE(is_valid_utf8(s)) << at;
    s.insert(at, "\xff");
    EXPECT_FALSE(is_valid_utf8(s)) << at;
    std::string cut(at, 'a');
    cut += "\xe2\x82";  // the first two bytes of U+20AC
    EXPECT_FALSE(is_valid_utf8(cut)) << at;
  }
}

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

}  // namespace
}  // namespace vtllm::text::testing
