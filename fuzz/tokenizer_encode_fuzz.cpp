// libFuzzer: encode + decode arbitrary bytes with a small byte-level BPE
// tokenizer shaped like Qwen3's (NFC, the Qwen split regex, ByteLevel,
// merges, special and normalized added tokens).
//
// Checks: no crash, decode() is valid UTF-8, every id names a token, and
// encode(decode(ids)) == ids (the decoded text is already normalized, the
// added tokens here contain no character that NFC could create, and each has
// a character outside the byte-level alphabet, so the decoder keeps its text).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/byte_level.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace {

using vtllm::text::Tokenizer;
using vtllm::text::TokenId;

std::string byte_char(unsigned char b) {
  std::string s;
  vtllm::text::byte_level_encode(std::string_view(reinterpret_cast<const char*>(&b), 1), s);
  return s;
}

const Tokenizer& fuzz_tokenizer() {
  static const Tokenizer tok = [] {
    nlohmann::json vocab = nlohmann::json::object();
    int next = 0;
    for (int b = 0; b < 256; ++b) vocab[byte_char(static_cast<unsigned char>(b))] = next++;
    nlohmann::json merges = nlohmann::json::array();
    const std::string sp = byte_char(' ');
    for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
             {"t", "h"}, {"th", "e"}, {sp, "the"}, {"i", "n"}, {sp, sp}, {"e", "r"}, {"1", "2"},
             {byte_char(0xE4), byte_char(0xBD)}, {byte_char(0xE4) + byte_char(0xBD), byte_char(0xA0)}}) {
      if (!vocab.contains(a + b)) vocab[a + b] = next++;
      merges.push_back(nlohmann::json::array({a, b}));
    }
    auto added = [&](const std::string& c, bool special, bool normalized) {
      return nlohmann::json{{"id", next++}, {"content", c}, {"special", special},
                            {"lstrip", false}, {"rstrip", false}, {"single_word", false},
                            {"normalized", normalized}};
    };
    const nlohmann::json j = {
        {"version", "1.0"},
        {"added_tokens", nlohmann::json::array({added("<|s|>", true, false),
                                                added("<|im|>", true, false),
                                                added("\xE1\xB9\xA9x", false, true)})},
        {"normalizer", {{"type", "NFC"}}},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           nlohmann::json::array(
               {{{"type", "Split"},
                 {"pattern",
                  {{"Regex",
                    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                 {"behavior", "Isolated"},
                 {"invert", false}},
                {{"type", "ByteLevel"},
                 {"add_prefix_space", false},
                 {"trim_offsets", false},
                 {"use_regex", false}}})}}},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
    };
    return Tokenizer::from_json(j.dump(), "fuzz tokenizer");
  }();
  return tok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Tokenizer& tok = fuzz_tokenizer();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<TokenId> ids = tok.encode(text, false);
  for (TokenId id : ids) {
    if (!tok.id_to_token(id)) std::abort();
  }
  const std::string back = tok.decode(ids, false);
  if (!vtllm::text::is_valid_utf8(back)) std::abort();
  if (tok.encode(back, false) != ids) std::abort();
  if (!vtllm::text::is_valid_utf8(tok.decode(ids, true))) std::abort();
  return 0;
}
