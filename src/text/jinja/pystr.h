// Python str semantics on UTF-8 strings: templates index, slice, strip, split and
// case-map by code point, exactly as Python 3 does on its str type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vtllm::jinja::py {

// Code points of s (invalid UTF-8 bytes decode one by one as U+FFFD-free raw bytes
// mapped to U+DC80.., like Python's surrogateescape, so nothing is lost).
std::vector<char32_t> decode(std::string_view s);
std::string encode(const std::vector<char32_t>& cps);
void append_utf8(std::string& out, char32_t cp);
// len(s) in code points.
size_t length(std::string_view s);

// str.isspace() for one code point (Unicode White_Space plus \x1c-\x1f).
bool is_space(char32_t c);
// str.splitlines() boundaries: \n \r \v \f \x1c \x1d \x1e \x85 \u2028 \u2029 (\r\n is one).
bool is_line_break(char32_t c);

// strip/lstrip/rstrip: chars == nullopt strips whitespace; otherwise any of chars.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / str.rsplit; sep == nullopt splits on whitespace runs. maxsplit < 0: no limit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends = false);
// str.replace(old, new, count); count < 0 replaces all.
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
// str.title(): uppercase after a non-cased character, lowercase otherwise.
std::string title(std::string_view s);
// str.capitalize(): first character upper, the rest lower.
std::string capitalize(std::string_view s);
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);
bool is_cased_upper(char32_t c);
bool is_cased_lower(char32_t c);

// repr() of a str: quotes chosen and characters escaped as Python does.
std::string repr(std::string_view s);

// s[index] by code point with Python's negative indexing; nullopt when out of range.
std::optional<std::string> at(std::string_view s, int64_t index);

// Python slice bounds for a sequence of length n; step != 0. Returns the indices.
std::vector<int64_t> slice_indices(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   int64_t step);

}  // namespace vtllm::jinja::py
