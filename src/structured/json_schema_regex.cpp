// regex_to_gbnf and the shared GBNF text helpers (json_schema_gbnf.h).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "structured/grammar.h"
#include "structured/json_schema.h"
#include "structured/json_schema_gbnf.h"

namespace vtllm::structured {
namespace gbnf {

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::vector<uint32_t> code_points(std::string_view text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    int len = c < 0x80 ? 1 : c < 0xC0 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : 0;
    VT_REQUIRE(len > 0 && i + len <= text.size(), "invalid UTF-8 at byte ", i);
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
      unsigned char d = static_cast<unsigned char>(text[i + k]);
      VT_REQUIRE((d & 0xC0) == 0x80, "invalid UTF-8 at byte ", i + k);
      cp = (cp << 6) | (d & 0x3F);
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

namespace {
// One code point inside [...]: printable ASCII other than the class's syntax characters and
// non-ASCII raw; everything else as \xHH / \uHHHH.
std::string class_char(uint32_t cp) {
  bool plain = (cp >= 0x20 && cp < 0x7F && cp != ']' && cp != '[' && cp != '\\' && cp != '^' &&
                cp != '-' && cp != '"') ||
               cp >= 0xA0;
  if (plain) return utf8(cp);
  char buf[12];
  if (cp < 0x100) {
    std::snprintf(buf, sizeof(buf), "\\x%02X", cp);
  } else if (cp > 0xFFFF) {
    std::snprintf(buf, sizeof(buf), "\\U%08X", cp);
  } else {
    std::snprintf(buf, sizeof(buf), "\\u%04X", cp);
  }
  return buf;
}
}  // namespace

std::string char_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, bool negated) {
  std::vector<std::pair<uint32_t, uint32_t>> r = ranges;
  std::sort(r.begin(), r.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& [lo, hi] : r) {
    if (!merged.empty() && lo <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, hi);
    } else {
      merged.emplace_back(lo, hi);
    }
  }
  std::string out = negated ? "[^" : "[";
  for (const auto& [lo, hi] : merged) {
    out += class_char(lo);
    if (hi != lo) out += (hi == lo + 1 ? "" : "-") + class_char(hi);
  }
  return out + "]";
}

std::string repeat(std::string_view expr, int min, int max) {
  std::string e(expr);
  if (max == 0) return "\"\"";
  if (min == 1 && max == 1) return e;
  if (min == 0 && max == 1) return e + "?";
  if (min == 0 && max < 0) return e + "*";
  if (min == 1 && max < 0) return e + "+";
  if (max < 0) return str_cat(e, "{", min, ",}");
  if (min == max) return str_cat(e, "{", min, "}");
  return str_cat(e, "{", min, ",", max, "}");
}

}  // namespace gbnf

namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}};

// Recursive-descent translation; each method returns a GBNF expression.
class RegexTranslator {
 public:
  RegexTranslator(std::string_view p, bool json) : p_(p), json_(json) {}

  std::string run() {
    bool anchored_start = !p_.empty() && p_[0] == '^';
    if (anchored_start) ++i_;
    std::string body = alternation();
    bool anchored_end = false;
    if (i_ < p_.size() && p_[i_] == '$') {
      anchored_end = true;
      ++i_;
    }
    if (i_ != p_.size()) fail(str_cat("unexpected '", p_[i_], "'"));
    std::string any = "(" + any_char() + ")*";
    std::string out;
    if (!anchored_start) out += any + " ";
    out += body;
    if (!anchored_end) out += " " + any;
    return "(" + out + ")";
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    VT_THROW("pattern '", p_, "': ", what, " at offset ", i_);
  }

  bool at_end() const { return i_ >= p_.size(); }

  std::string alternation() {
    std::vector<std::string> alts{sequence()};
    while (!at_end() && p_[i_] == '|') {
      ++i_;
      alts.push_back(sequence());
    }
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
    return out + ")";
  }

  std::string sequence() {
    std::string out;
    while (!at_end() && p_[i_] != '|' && p_[i_] != ')') {
      if (p_[i_] == '$' && i_ + 1 == p_.size()) break;
      std::string a = atom();
      a = quantified(a);
      out += (out.empty() ? "" : " ") + a;
    }
    return out.empty() ? "\"\"" : "(" + out + ")";
  }

  int number() {
    size_t start = i_;
    long v = 0;
    while (!at_end() && p_[i_] >= '0' && p_[i_] <= '9') {
      v = v * 10 + (p_[i_] - '0');
      if (v > gbnf::kMaxRepeat) fail(str_cat("repetition count above ", gbnf::kMaxRepeat));
      ++i_;
    }
    if (i_ == start) fail("expected a number in {}");
    return static_cast<int>(v);
  }

  std::string quantified(const std::string& a) {
    if (at_end()) return a;
    int min = 1, max = 1;
    char c = p_[i_];
    if (c == '*') {
      min = 0, max = -1, ++i_;
    } else if (c == '+') {
      min = 1, max = -1, ++i_;
    } else if (c == '?') {
      min = 0, max = 1, ++i_;
    } else if (c == '{') {
      ++i_;
      min = number();
      max = min;
      if (!at_end() && p_[i_] == ',') {
        ++i_;
        max = (!at_end() && p_[i_] == '}') ? -1 : number();
      }
      if (at_end() || p_[i_] != '}') fail("unterminated {m,n}");
      ++i_;
      if (max >= 0 && max < min) fail("{m,n} with n < m");
    } else {
      return a;
    }
    if (!at_end() && p_[i_] == '?') ++i_;  // lazy: same language
    if (!at_end() && (p_[i_] == '*' || p_[i_] == '+' || p_[i_] == '?' || p_[i_] == '{')) {
      fail("nested quantifier");
    }
    return gbnf::repeat("(" + a + ")", min, max);
  }

  uint32_t next_code_point() {
    unsigned char c = static_cast<unsigned char>(p_[i_]);
    int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (c >= 0x80 && c < 0xC0) fail("invalid UTF-8");
    if (i_ + len > p_.size()) fail("truncated UTF-8");
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
      unsigned char d = static_cast<unsigned char>(p_[i_ + k]);
      if ((d & 0xC0) != 0x80) fail("invalid UTF-8");
      cp = (cp << 6) | (d & 0x3F);
    }
    i_ += len;
    return cp;
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      const int d = at_end() ? -1 : hex_digit_value(p_[i_]);
      if (d < 0) fail("bad hex escape");
      ++i_;
      v = v * 16 + uint32_t(d);
    }
    return v;
  }

  // After a backslash: a class (\d ...) into `set`/`negated`, or a single code point.
  // Returns true for a class.
  bool escape(Ranges* set, bool* negated, uint32_t* cp) {
    if (at_end()) fail("trailing backslash");
    char c = p_[i_++];
    *negated = false;
    switch (c) {
      case 'd':
        *set = kDigit;
        return true;
      case 'w':
        *set = kWord;
        return true;
      case 's':
        *set = kSpace;
        return true;
      case 'D':
        *set = kDigit, *negated = true;
        return true;
      case 'W':
        *set = kWord, *negated = true;
        return true;
      case 'S':
        *set = kSpace, *negated = true;
        return true;
      case 'n':
        *cp = '\n';
        return false;
      case 't':
        *cp = '\t';
        return false;
      case 'r':
        *cp = '\r';
        return false;
      case 'f':
        *cp = '\f';
        return false;
      case 'v':
        *cp = '\v';
        return false;
      case '0':
        *cp = 0;
        return false;
      case 'x':
        *cp = hex(2);
        return false;
      case 'u':
        *cp = hex(4);
        return false;
      case 'b':
      case 'B':
        --i_;
        fail("word boundary \\b / \\B is unsupported");
      case 'k':
        --i_;
        fail("named backreference is unsupported");
      default:
        if (c >= '1' && c <= '9') {
          --i_;
          fail("backreference is unsupported");
        }
        if (std::isalnum(static_cast<unsigned char>(c))) {
          --i_;
          fail(str_cat("unknown escape \\", c));
        }
        --i_;
        *cp = next_code_point();
        return false;
    }
  }

  std::string atom() {
    char c = p_[i_];
    if (c == '(') {
      ++i_;
      if (!at_end() && p_[i_] == '?') {
        if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') {
          i_ += 2;
        } else {
          fail("lookaround and named groups are unsupported");
        }
      }
      std::string inner = alternation();
      if (at_end() || p_[i_] != ')') fail("missing ')'");
      ++i_;
      return "(" + inner + ")";
    }
    if (c == '[') return bracket();
    if (c == '.') {
      ++i_;
      return set_expr({{'\n', '\n'}, {'\r', '\r'}}, true);
    }
    if (c == '^' || c == '$') fail("anchor inside the pattern is unsupported");
    if (c == '*' || c == '+' || c == '?' || c == '{') fail("quantifier without operand");
    if (c == ')') fail("unbalanced ')'");
    if (c == '\\') {
      ++i_;
      Ranges set;
      bool neg;
      uint32_t cp;
      if (escape(&set, &neg, &cp)) return set_expr(set, neg);
      return char_expr(cp);
    }
    return char_expr(next_code_point());
  }

  std::string bracket() {
    ++i_;  // '['
    bool negated = false;
    if (!at_end() && p_[i_] == '^') negated = true, ++i_;
    Ranges set;
    bool first = true;
    while (true) {
      if (at_end()) fail("unterminated '['");
      if (p_[i_] == ']' && !first) break;
      first = false;
      uint32_t lo;
      if (p_[i_] == '\\') {
        ++i_;
        Ranges sub;
        bool sub_neg;
        if (escape(&sub, &sub_neg, &lo)) {
          if (sub_neg) fail("negated class escape inside [] is unsupported");
          set.insert(set.end(), sub.begin(), sub.end());
          continue;
        }
      } else {
        lo = next_code_point();
      }
      uint32_t hi = lo;
      if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
        ++i_;
        if (p_[i_] == '\\') {
          ++i_;
          Ranges sub;
          bool sub_neg;
          if (escape(&sub, &sub_neg, &hi)) fail("class escape as a range end");
        } else {
          hi = next_code_point();
        }
        if (hi < lo) fail("range out of order");
      }
      set.emplace_back(lo, hi);
    }
    ++i_;  // ']'
    return set_expr(set, negated);
  }

  // How code point `cp` is written: raw, or JSON-escaped inside a string literal.
  std::string char_expr(uint32_t cp) const {
    if (!json_) return gbnf::literal(gbnf::utf8(cp));
    switch (cp) {
      case '"':
        return gbnf::literal("\\\"");
      case '\\':
        return gbnf::literal("\\\\");
      case '\b':
        return gbnf::literal("\\b");
      case '\f':
        return gbnf::literal("\\f");
      case '\n':
        return gbnf::literal("\\n");
      case '\r':
        return gbnf::literal("\\r");
      case '\t':
        return gbnf::literal("\\t");
      default:
        break;
    }
    if (cp < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      return gbnf::literal(buf);
    }
    return gbnf::literal(gbnf::utf8(cp));
  }

  // A set of code points (or its complement), in the output encoding.
  std::string set_expr(const Ranges& set, bool negated) const {
    if (!json_) {
      return gbnf::char_class(set, negated);
    }
    // JSON: the raw part leaves out '"', '\' and controls; those that belong to the set are
    // added as their escapes.
    auto in_set = [&](uint32_t cp) {
      bool in = false;
      for (const auto& [lo, hi] : set) in = in || (cp >= lo && cp <= hi);
      return in != negated;
    };
    std::vector<std::string> alts;
    if (negated) {
      Ranges excl = set;
      excl.emplace_back(0, 0x1F);
      excl.emplace_back('"', '"');
      excl.emplace_back('\\', '\\');
      alts.push_back(gbnf::char_class(excl, true));
    } else {
      Ranges raw;
      for (auto [lo, hi] : set) {
        // Split each range around 0x00-0x1F, '"' and '\'.
        uint32_t start = std::max<uint32_t>(lo, 0x20);
        for (uint32_t cut : {uint32_t('"'), uint32_t('\\')}) {
          if (start <= hi && cut >= start && cut <= hi) {
            if (cut > start) raw.emplace_back(start, cut - 1);
            start = cut + 1;
          }
        }
        if (start <= hi) raw.emplace_back(start, hi);
      }
      if (!raw.empty()) alts.push_back(gbnf::char_class(raw, false));
    }
    for (uint32_t cp = 0; cp < 0x20; ++cp) {
      if (in_set(cp)) alts.push_back(char_expr(cp));
    }
    if (in_set('"')) alts.push_back(char_expr('"'));
    if (in_set('\\')) alts.push_back(char_expr('\\'));
    if (alts.empty()) fail("empty character class");
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
    return out + ")";
  }

  std::string any_char() const {
    return json_ ? std::string(gbnf::kJsonChar) : gbnf::char_class({{0, 0x10FFFF}}, false);
  }

  std::string_view p_;
  bool json_;
  size_t i_ = 0;
};

}  // namespace

std::string regex_to_gbnf(std::string_view pattern, bool json_escaped) {
  return RegexTranslator(pattern, json_escaped).run();
}

}  // namespace vtllm::structured
