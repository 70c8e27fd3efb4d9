#include "text/utf8.h"

#include <utf8proc.h>

#include <cstdint>
#include <cstring>

namespace vtllm::text {

size_t utf8_valid_len(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const size_t n = s.size() - i;
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  const auto cont = [&](size_t k) { return (b(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return n >= 2 && cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (n < 3) return 0;
    const uint8_t c1 = b(i + 1);
    const uint8_t lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return c1 >= lo && c1 <= hi && cont(i + 2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (n < 4) return 0;
    const uint8_t c1 = b(i + 1);
    const uint8_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return c1 >= lo && c1 <= hi && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

char32_t utf8_decode(std::string_view s, size_t i, size_t* len) {
  const auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<uint8_t>(s[k])); };
  const char32_t c = b(i);
  if (c < 0x80) {
    *len = 1;
    return c;
  }
  if (c < 0xE0) {
    *len = 2;
    return ((c & 0x1F) << 6) | (b(i + 1) & 0x3F);
  }
  if (c < 0xF0) {
    *len = 3;
    return ((c & 0x0F) << 12) | ((b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
  }
  *len = 4;
  return ((c & 0x07) << 18) | ((b(i + 1) & 0x3F) << 12) | ((b(i + 2) & 0x3F) << 6) |
         (b(i + 3) & 0x3F);
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    // Eight ASCII bytes at a time (a request body is mostly ASCII: a base64 image is).
    if (i + 8 <= s.size()) {
      uint64_t word;
      std::memcpy(&word, s.data() + i, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = utf8_valid_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

namespace {

// Length of the maximal subpart starting at s[i] (a prefix of some valid
// sequence, at least 1 byte), used when s[i] starts no valid sequence.
size_t maximal_subpart_len(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  size_t k = 1;
  if (i + k < s.size() && b(i + k) >= lo && b(i + k) <= hi) {
    ++k;
    while (k < need && i + k < s.size() && (b(i + k) & 0xC0) == 0x80) ++k;
  }
  return k;
}

}  // namespace

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size()) {
      if (static_cast<uint8_t>(s[i]) < 0x80) {
        ++i;
        continue;
      }
      const size_t n = utf8_valid_len(s, i);
      if (n == 0) break;
      i += n;
    }
    out.append(s.substr(start, i - start));
    if (i < s.size()) {
      out.append(kReplacementChar);
      i += maximal_subpart_len(s, i);
    }
  }
  return out;
}

size_t utf8_complete_prefix_len(std::string_view s) {
  // A character is at most 4 bytes: only the last 3 can be an unfinished one.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t i = n - back;
    const uint8_t c = static_cast<uint8_t>(s[i]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    if (c < 0x80) return n;
    if (utf8_valid_len(s, i) != 0) return n;
    return maximal_subpart_len(s, i) == back ? i : n;
  }
  return n;
}

bool is_white_space(char32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_word_char(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
           cp == '_';
  }
  if (cp == 0x200C || cp == 0x200D || (cp >= 0x24B6 && cp <= 0x24E9)) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

}  // namespace vtllm::text
