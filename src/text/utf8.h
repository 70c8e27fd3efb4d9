// UTF-8 helpers for the tokenizer: decoding, lossy repair, Unicode classes.
//
// Lossy repair follows the "maximal subpart" practice of Unicode chapter 3 (what
// Rust's String::from_utf8_lossy and WHATWG TextDecoder do): each maximal
// invalid subsequence becomes one U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vtllm::text {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i], or 0 if s[i] starts none.
size_t utf8_valid_len(std::string_view s, size_t i);

// Decodes the (valid) character at s[i]; sets *len to its byte length.
char32_t utf8_decode(std::string_view s, size_t i, size_t* len);

void utf8_append(std::string& out, char32_t cp);

bool is_valid_utf8(std::string_view s);

// s with every maximal invalid subpart replaced by U+FFFD.
std::string utf8_lossy(std::string_view s);

// Bytes of s that form complete characters, leaving out a trailing sequence
// that is a valid but unfinished prefix of a character.
size_t utf8_complete_prefix_len(std::string_view s);

// Unicode White_Space (what Rust's char::is_whitespace and regex \s use).
bool is_white_space(char32_t cp);

// Rust regex's Unicode \w: alphabetic, marks, decimal digits, connector
// punctuation, join controls (alphabetic approximated by L*, Nl and the
// Other_Alphabetic symbols U+24B6..U+24E9).
bool is_word_char(char32_t cp);

}  // namespace vtllm::text
