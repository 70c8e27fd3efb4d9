// Loading tokenizer.json: hostile files give errors that name the problem, and
// added-token options (lstrip, rstrip, single_word, normalized) match HF
// tokenizers on a synthetic vocabulary.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "text/tokenizer.h"
#include "tokenizer_test_util.h"

namespace vtllm::text::testing {
namespace {

using nlohmann::json;

// A small byte-level BPE tokenizer: every byte, a few merges, some added tokens.
json small_tokenizer() {
  json vocab = json::object();
  // The byte-level alphabet in byte order gets ids 0..255.
  const std::string tok_json = read_file(real_tokenizer_json("qwen3"));
  const json real = json::parse(tok_json);
  int next = 0;
  std::vector<std::string> alphabet;
  for (auto& [k, v] : real["model"]["vocab"].items()) {
    if (v.get<int>() < 256) alphabet.resize(std::max<size_t>(alphabet.size(), v.get<int>() + 1));
    if (v.get<int>() < 256) alphabet[v.get<int>()] = k;
  }
  for (const std::string& a : alphabet) vocab[a] = next++;
  json merges = json::array();
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"\xC4\xA0", "w"}, {"o", "r"}}) {
    if (!vocab.contains(a + b)) vocab[a + b] = next++;
    merges.push_back(json::array({a, b}));
  }
  auto added = [&](const std::string& content, bool special, bool lstrip, bool rstrip,
                   bool single_word, bool normalized) {
    return json{{"id", next++},          {"content", content}, {"special", special},
                {"lstrip", lstrip},      {"rstrip", rstrip},   {"single_word", single_word},
                {"normalized", normalized}};
  };
  json added_tokens = json::array({
      added("<s>", true, false, false, false, false),
      added("[L]", true, true, false, false, false),
      added("[R]", true, false, true, false, false),
      added("[LR]", false, true, true, false, false),
      added("word", false, false, false, true, false),
      added("caf\xC3\xA9", false, false, false, false, true),  // normalized: matches NFC'd text
      added("<s>x", true, false, false, false, false),         // longest match wins over <s>
  });
  return json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added_tokens},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"},
                       {"pattern", {{"Regex", "\\s+|\\p{L}+|\\p{N}|[^\\s\\p{L}\\p{N}]+"}}},
                       {"behavior", "Isolated"},
                       {"invert", false}},
                      {{"type", "ByteLevel"},
                       {"add_prefix_space", false},
                       {"trim_offsets", false},
                       {"use_regex", false}}})}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"pair", json::array()},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {256 + 7}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}}},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", false}}},
  };
}

std::string write_temp(const std::string& text) {
  char tmpl[] = "/tmp/vtllm_tokjson_XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  std::ofstream(tmpl, std::ios::binary) << text;
  return tmpl;
}

TEST(TokenizerAddedTokens, OptionsMatchHfTokenizers) {
  json j = small_tokenizer();
  // The post-processor must name the id HF assigns to <s> (after the vocabulary).
  const Tokenizer probe = Tokenizer::from_json(j.dump());
  j["post_processor"]["special_tokens"]["<s>"]["ids"] = {*probe.token_to_id("<s>")};
  const std::string path = write_temp(j.dump());
  const Tokenizer tok = Tokenizer::from_file(path);
  const std::vector<std::string> texts = {
      "hello world",
      "a   [L]b",
      "a[R]   b",
      "x  [LR]  y [LR][LR]   ",
      "word words sword word. _word word_ wordy 1word",
      "cafe\xCC\x81 and caf\xC3\xA9 and CAF\xC3\x89",
      "<s>x <s>y <s><s>xx",
      "\t[L]\n[R]\n",
      "",
  };
  for (const std::string& t : texts) {
    for (bool special : {false, true}) {
      EXPECT_EQ(tok.encode(t, special), rust_encode(path, t, special))
          << "'" << t << "' special=" << special;
    }
  }
  // The comparison above is not vacuous: lstrip swallowed the spaces into [L].
  const std::vector<TokenId> ids = tok.encode("a   [L]b", false);
  EXPECT_EQ(ids, (std::vector<TokenId>{*tok.token_to_id("a"), *tok.token_to_id("[L]"),
                                       *tok.token_to_id("b")}));
  std::remove(path.c_str());
}

// Loads `j`; expects a vtllm::Error whose message contains every one of `parts`.
void expect_load_error(const json& j, std::initializer_list<std::string> parts) {
  try {
    Tokenizer::from_json(j.dump(), "bad.json");
    ADD_FAILURE() << "loaded without error: " << j.dump().substr(0, 200);
  } catch (const vtllm::Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
  }
}

TEST(TokenizerLoad, HostileFilesAreClearErrors) {
  const json good = small_tokenizer();
  ASSERT_NO_THROW(Tokenizer::from_json(good.dump()));
  {
    SCOPED_TRACE("not JSON");
    EXPECT_THROW(Tokenizer::from_json("{\"model\": [", "bad.json"), vtllm::Error);
  }
  json j = good;
  j["model"]["vocab"]["h"] = "seven";
  expect_load_error(j, {"bad.json: model.vocab", "expected an integer"});
  j = good;
  j["model"]["vocab"]["h"] = 99999999999999;
  expect_load_error(j, {"model.vocab", "out of range"});
  j = good;
  j["model"]["vocab"]["h"] = 4000000;
  expect_load_error(j, {"model.vocab", "far beyond"});
  j = good;
  j["model"]["vocab"]["zz"] = 0;
  expect_load_error(j, {"id 0 is given to both"});
  j = good;
  j["model"]["merges"].push_back(json::array({"q", "nope"}));
  expect_load_error(j, {"model.merges[6]", "'nope'", "not in the vocabulary"});
  j = good;
  j["model"]["merges"].push_back("a b c");
  expect_load_error(j, {"model.merges[6]", "two tokens"});
  j = good;
  j["model"]["merges"].push_back(json::array({"x", "y"}));  // "xy" is not a token
  expect_load_error(j, {"'xy'", "not in the vocabulary"});
  j = good;
  j["model"]["merges"] = 3;
  expect_load_error(j, {"model.merges", "expected an array"});
  j = good;
  j["model"].erase("vocab");
  expect_load_error(j, {"model", "missing field 'vocab'"});
  j = good;
  j["model"]["dropout"] = 0.1;
  expect_load_error(j, {"dropout"});
  j = good;
  j["model"]["type"] = "Unigram";
  expect_load_error(j, {"unsupported model type 'Unigram'"});
  j = good;
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  expect_load_error(j, {"pre_tokenizer.pretokenizers[0].pattern", "invalid regex", "(unclosed"});
  j = good;
  j["pre_tokenizer"]["pretokenizers"][1]["type"] = "Metaspace";
  expect_load_error(j, {"pre_tokenizer.pretokenizers[1]", "unsupported pre-tokenizer type 'Metaspace'"});
  j = good;
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways";
  expect_load_error(j, {"unknown split behavior 'Sideways'"});
  j = good;
  j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}};
  expect_load_error(j, {"normalizer", "unsupported normalizer type 'Precompiled'"});
  j = good;
  j["decoder"] = {{"type", "WordPiece"}};
  expect_load_error(j, {"decoder", "unsupported decoder type 'WordPiece'"});
  j = good;
  j["post_processor"] = {{"type", "BertProcessing"}};
  expect_load_error(j, {"post_processor", "unsupported post-processor type 'BertProcessing'"});
  j = good;
  j["post_processor"]["single"][0]["SpecialToken"]["id"] = "</s>";
  expect_load_error(j, {"'</s>' is missing from special_tokens"});
  j = good;
  j["added_tokens"][0]["lstrip"] = "yes";
  expect_load_error(j, {"added_tokens[0].lstrip", "expected true or false"});
  j = good;
  j["truncation"] = {{"max_length", 5}};
  expect_load_error(j, {"truncation is not supported"});
  j = good;
  json deep = {{"type", "NFC"}};
  for (int i = 0; i < 100; ++i) deep = {{"type", "Sequence"}, {"normalizers", json::array({deep})}};
  j["normalizer"] = deep;
  expect_load_error(j, {"nested deeper than"});
}

TEST(TokenizerLoad, FromDirAppliesTransformersBosRule) {
  // DeepSeek V3's tokenizer_config says LlamaTokenizerFast with add_bos_token:
  // transformers then prepends BOS although tokenizer.json's post-processor does not.
  const Tokenizer bare = Tokenizer::from_file(real_tokenizer_json("deepseek_v3"));
  const Tokenizer dir = Tokenizer::from_dir(real_tokenizer_dir("deepseek_v3"));
  const std::vector<TokenId> plain = bare.encode("Hello", true);
  std::vector<TokenId> expect = {*dir.bos_id()};
  expect.insert(expect.end(), plain.begin(), plain.end());
  EXPECT_EQ(dir.encode("Hello", true), expect);
  EXPECT_EQ(*dir.bos_id(), *bare.token_to_id("<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"));
  // Qwen3 (Qwen2Tokenizer) is left as tokenizer.json says: no BOS.
  const Tokenizer qwen = Tokenizer::from_dir(real_tokenizer_dir("qwen3"));
  EXPECT_EQ(qwen.encode("Hello", true), Tokenizer::from_file(real_tokenizer_json("qwen3")).encode("Hello", true));
  EXPECT_FALSE(qwen.bos_id().has_value());
  EXPECT_EQ(qwen.eos_id(), qwen.token_to_id("<|im_end|>"));
}

TEST(TokenizerConcurrency, ParallelEncodesEqualSerialOnes) {
  const Tokenizer tok = Tokenizer::from_file(real_tokenizer_json("qwen3"));
  std::vector<std::string> texts;
  for (const CorpusCase& c : corpus()) texts.push_back(c.text);
  for (int rep = 0; rep < 3; ++rep)
    for (size_t i = 0, n = texts.size(); i < n; ++i) texts.push_back(texts[i] + std::to_string(rep));
  std::vector<std::vector<TokenId>> serial;
  for (const std::string& t : texts) serial.push_back(tok.encode(t));
  EXPECT_EQ(tok.encode_batch(texts, true, 4), serial);
}

}  // namespace
}  // namespace vtllm::text::testing
