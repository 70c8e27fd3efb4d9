#include "text/jinja/pystr.h"

#include <clocale>
#include <cstdio>
#include <cwctype>
#include <locale.h>
#include <wctype.h>

#include "text/utf8.h"

namespace vtllm::jinja::py {

namespace {

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

// glibc's C.UTF-8 locale carries Unicode's simple case mappings; without it we fall
// back to ASCII. Created once, never freed (process lifetime).
locale_t utf8_locale() {
  static locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
    return l;
  }();
  return loc;
}

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {  // an undecodable byte, restored as it was
    out.push_back(static_cast<char>(cp - 0xDC00));
  } else {
    text::utf8_append(out, cp);
  }
}

std::vector<char32_t> decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (text::utf8_valid_len(s, i) == 0) {
      // surrogateescape: only bytes >= 0x80 get here
      out.push_back(0xDC00 + static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    size_t len = 0;
    out.push_back(text::utf8_decode(s, i, &len));
    i += len;
  }
  return out;
}

std::string encode(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) append_utf8(out, c);
  return out;
}

size_t length(std::string_view s) {
  if (is_ascii(s)) return s.size();
  return decode(s).size();
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  std::vector<char32_t> cps = decode(s);
  std::vector<char32_t> set;
  if (chars) set = decode(*chars);
  auto strippable = [&](char32_t c) {
    if (!chars) return is_space(c);
    for (char32_t x : set)
      if (x == c) return true;
    return false;
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strippable(cps[b])) ++b;
  if (right)
    while (e > b && strippable(cps[e - 1])) --e;
  return encode(std::vector<char32_t>(cps.begin() + b, cps.begin() + e));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  std::vector<char32_t> cps = decode(s);
  size_t i = 0, n = cps.size();
  while (true) {
    while (i < n && is_space(cps[i])) ++i;
    if (i == n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      size_t e = n;
      while (e > i && is_space(cps[e - 1])) --e;
      out.push_back(encode(std::vector<char32_t>(cps.begin() + i, cps.begin() + e)));
      break;
    }
    size_t j = i;
    while (j < n && !is_space(cps[j])) ++j;
    out.push_back(encode(std::vector<char32_t>(cps.begin() + i, cps.begin() + j)));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(s.substr(0, end));
    return {out.rbegin(), out.rend()};
  }
  std::vector<char32_t> cps = decode(s);
  size_t e = cps.size();
  while (true) {
    while (e > 0 && is_space(cps[e - 1])) --e;
    if (e == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      size_t b = 0;
      while (b < e && is_space(cps[b])) ++b;
      out.push_back(encode(std::vector<char32_t>(cps.begin() + b, cps.begin() + e)));
      break;
    }
    size_t b = e;
    while (b > 0 && !is_space(cps[b - 1])) --b;
    out.push_back(encode(std::vector<char32_t>(cps.begin() + b, cps.begin() + e)));
    e = b;
  }
  return {out.rbegin(), out.rend()};
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  std::vector<char32_t> cps = decode(s);
  size_t i = 0, start = 0, n = cps.size();
  while (i < n) {
    if (!is_line_break(cps[i])) {
      ++i;
      continue;
    }
    size_t brk = (cps[i] == '\r' && i + 1 < n && cps[i + 1] == '\n') ? 2 : 1;
    size_t end = keepends ? i + brk : i;
    out.push_back(encode(std::vector<char32_t>(cps.begin() + start, cps.begin() + end)));
    i += brk;
    start = i;
  }
  if (start < n) out.push_back(encode(std::vector<char32_t>(cps.begin() + start, cps.end())));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `with` before every code point and at the end.
    std::vector<char32_t> cps = decode(s);
    int64_t done = 0;
    for (char32_t c : cps) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      append_utf8(out, c);
    }
    if (count < 0 || done < count) out += with;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(with);
    pos = hit + old.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

char32_t to_upper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  locale_t loc = utf8_locale();
  if (!loc || (c >= 0xDC80 && c <= 0xDCFF)) return c;
  return static_cast<char32_t>(towupper_l(static_cast<wint_t>(c), loc));
}

char32_t to_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  locale_t loc = utf8_locale();
  if (!loc || (c >= 0xDC80 && c <= 0xDCFF)) return c;
  return static_cast<char32_t>(towlower_l(static_cast<wint_t>(c), loc));
}

bool is_cased_upper(char32_t c) { return to_lower(c) != c; }
bool is_cased_lower(char32_t c) { return to_upper(c) != c; }

std::string upper(std::string_view s) {
  std::string out;
  for (char32_t c : decode(s)) append_utf8(out, to_upper(c));
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  for (char32_t c : decode(s)) append_utf8(out, to_lower(c));
  return out;
}

std::string title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (char32_t c : decode(s)) {
    bool cased = is_cased_upper(c) || is_cased_lower(c);
    append_utf8(out, prev_cased ? to_lower(c) : to_upper(c));
    prev_cased = cased;
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (char32_t c : decode(s)) {
    append_utf8(out, first ? to_upper(c) : to_lower(c));
    first = false;
  }
  return out;
}

namespace {

// Python's str.isprintable() approximated by the categories that matter in practice:
// controls, format characters, separators other than space, surrogates, private use.
bool printable(char32_t c) {
  if (c < 0x20 || c == 0x7F) return false;
  if (c < 0x7F) return true;
  if (c <= 0xA0 || c == 0xAD) return false;
  if (c == 0x1680 || c == 0x180E || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
      (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB))
    return false;
  if ((c >= 0xD800 && c <= 0xF8FF) || (c >= 0xF0000)) return false;
  if (c == 0x0378 || c == 0x0379 || (c & 0xFFFE) == 0xFFFE) return false;
  return true;
}

}  // namespace

std::string repr(std::string_view s) {
  std::vector<char32_t> cps = decode(s);
  bool has_single = false, has_double = false;
  for (char32_t c : cps) {
    has_single |= c == '\'';
    has_double |= c == '"';
  }
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  char buf[16];
  for (char32_t c : cps) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c >= 0xDC80 && c <= 0xDCFF) {
      std::snprintf(buf, sizeof buf, "\\udc%02x", static_cast<unsigned>(c & 0xFF));
      out += buf;
    } else if (printable(c)) {
      append_utf8(out, c);
    } else if (c < 0x100) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out.push_back(quote);
  return out;
}

std::optional<std::string> at(std::string_view s, int64_t index) {
  if (is_ascii(s)) {
    int64_t n = static_cast<int64_t>(s.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n) return std::nullopt;
    return std::string(1, s[static_cast<size_t>(index)]);
  }
  std::vector<char32_t> cps = decode(s);
  int64_t n = static_cast<int64_t>(cps.size());
  if (index < 0) index += n;
  if (index < 0 || index >= n) return std::nullopt;
  std::string out;
  append_utf8(out, cps[static_cast<size_t>(index)]);
  return out;
}

std::vector<int64_t> slice_indices(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   int64_t step) {
  // CPython's PySlice_AdjustIndices.
  int64_t lo, hi;
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  lo = adjust(start, step < 0 ? n - 1 : 0);
  hi = adjust(stop, step < 0 ? -1 : n);
  std::vector<int64_t> out;
  if (step > 0)
    for (int64_t i = lo; i < hi; i += step) out.push_back(i);
  else
    for (int64_t i = lo; i > hi; i += step) out.push_back(i);
  return out;
}

}  // namespace vtllm::jinja::py
