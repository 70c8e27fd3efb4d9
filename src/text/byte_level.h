// GPT-2's byte-level alphabet: every byte maps to one printable character
// (the printable Latin-1 bytes to themselves, the rest to U+0100..U+0143).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vtllm::text {

// Appends the byte-level spelling of each byte of `bytes` to `out`.
void byte_level_encode(std::string_view bytes, std::string& out);

// The byte that character `cp` stands for, or nullopt if `cp` is not in the alphabet.
std::optional<uint8_t> byte_level_char_to_byte(char32_t cp);

// The bytes a token's byte-level spelling stands for, or nullopt when some
// character of it is outside the alphabet (HF then keeps the token's own bytes).
std::optional<std::string> byte_level_decode_token(std::string_view token);

}  // namespace vtllm::text
