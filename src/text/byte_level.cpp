#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace vtllm::text {

namespace {

struct Tables {
  std::array<char32_t, 256> byte_to_char{};
  std::array<std::string, 256> byte_to_utf8;
  std::array<int16_t, 0x144> char_to_byte{};  // -1 where the character is not in the alphabet

  Tables() {
    char_to_byte.fill(-1);
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      byte_to_char[b] = printable(b) ? static_cast<char32_t>(b) : next++;
    }
    for (int b = 0; b < 256; ++b) {
      utf8_append(byte_to_utf8[b], byte_to_char[b]);
      char_to_byte[byte_to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

void byte_level_encode(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (unsigned char b : bytes) out.append(t.byte_to_utf8[b]);
}

std::optional<uint8_t> byte_level_char_to_byte(char32_t cp) {
  const Tables& t = tables();
  if (cp >= t.char_to_byte.size() || t.char_to_byte[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(t.char_to_byte[cp]);
}

std::optional<std::string> byte_level_decode_token(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    size_t len = 0;
    if (utf8_valid_len(token, i) == 0) return std::nullopt;
    const auto b = byte_level_char_to_byte(utf8_decode(token, i, &len));
    if (!b) return std::nullopt;
    out.push_back(static_cast<char>(*b));
    i += len;
  }
  return out;
}

}  // namespace vtllm::text
