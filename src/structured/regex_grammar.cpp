// Regex (JSON-Schema pattern subset) and choice -> Grammar.
#include "structured/regex_grammar.h"

#include <algorithm>

#include "base/error.h"
#include "text/utf8.h"

namespace vtllm::structured {
namespace {

using Ranges = std::vector<CodepointRange>;

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript WhiteSpace and LineTerminator.
const Ranges kSpace = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680},
                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                       {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges kNotDot = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

Ranges complement(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  char32_t next = 0;
  for (auto [lo, hi] : r) {
    if (lo > next) out.push_back({next, lo - 1});
    next = std::max<char32_t>(next, hi + 1);
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return out;
}

class RegexParser {
 public:
  explicit RegexParser(std::string_view p) : p_(p) {}

  Grammar parse() {
    g_.root = g_.add_rule("regex");
    if (peek() == '^') ++pos_;
    parse_alternation(g_.root, 0);
    if (!eof()) fail("unmatched ')'");
    return std::move(g_);
  }

 private:
  bool eof() const { return pos_ >= p_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : '\0'; }

  template <class... Args>
  [[noreturn]] void fail_at(size_t at, Args&&... args) const {
    throw Error(
        str_cat("regex: ", std::forward<Args>(args)..., " at offset ", at, " of '", p_, "'"));
  }
  template <class... Args>
  [[noreturn]] void fail(Args&&... args) const {
    fail_at(pos_, std::forward<Args>(args)...);
  }

  void parse_alternation(int32_t rule, int depth) {
    std::vector<Alternative> alts;
    alts.push_back(parse_sequence(depth));
    while (peek() == '|') {
      ++pos_;
      alts.push_back(parse_sequence(depth));
    }
    g_.rules[static_cast<size_t>(rule)].alternatives = std::move(alts);
  }

  void push_class(const Ranges& r, bool negated, Alternative& seq) {
    seq.push_back(g_.codepoint_class(r, negated, "regex_class"));
  }

  void push_codepoint(char32_t cp, Alternative& seq) {
    std::string s;
    text::utf8_append(s, cp);
    g_.append_literal(s, seq);
  }

  Alternative parse_sequence(int depth) {
    Alternative seq;
    while (!eof()) {
      const char c = peek();
      if (c == '|' || c == ')') break;
      const size_t item = seq.size();
      if (c == '$') {
        if (depth == 0 && pos_ + 1 == p_.size()) {
          ++pos_;
          break;
        }
        fail("anchor '$' inside the pattern is not supported");
      }
      if (c == '^') fail("anchor '^' inside the pattern is not supported");
      if (c == '*' || c == '+' || c == '?') fail("'", c, "' has nothing to repeat");
      if (c == '{' && quantifier_ahead()) fail("'{' has nothing to repeat");
      if (c == '(') {
        parse_group(seq, depth);
      } else if (c == '[') {
        parse_class(seq);
      } else if (c == '.') {
        ++pos_;
        push_class(kNotDot, true, seq);
      } else if (c == '\\') {
        parse_escape(seq);
      } else {
        push_codepoint(next_codepoint(), seq);
      }
      if (seq.size() - item > 1) {  // a multi-element item repeats as a whole
        const int32_t r = g_.add_rule("regex_item");
        g_.rules[static_cast<size_t>(r)].alternatives.push_back(
            Alternative(seq.begin() + static_cast<ptrdiff_t>(item), seq.end()));
        seq.resize(item);
        seq.push_back(Element{Element::Kind::kRule, r});
      }
      parse_quantifier(seq, item);
    }
    return seq;
  }

  char32_t next_codepoint() {
    const size_t n = text::utf8_valid_len(p_, pos_);
    if (n == 0) fail("invalid UTF-8");
    size_t len = 0;
    const char32_t cp = text::utf8_decode(p_, pos_, &len);
    pos_ += len;
    return cp;
  }

  // True when a valid {m}, {m,} or {m,n} starts at pos_.
  bool quantifier_ahead() const {
    size_t i = pos_ + 1;
    const size_t d0 = i;
    while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') ++i;
    if (i == d0) return false;
    if (i < p_.size() && p_[i] == '}') return true;
    if (i >= p_.size() || p_[i] != ',') return false;
    ++i;
    while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') ++i;
    return i < p_.size() && p_[i] == '}';
  }

  int parse_int() {
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > 10000) fail("repetition count above 10000");
      ++pos_;
    }
    return static_cast<int>(v);
  }

  void parse_quantifier(Alternative& seq, size_t item) {
    int min = 1, max = 1;
    const char c = peek();
    if (c == '*') {
      min = 0, max = -1;
      ++pos_;
    } else if (c == '+') {
      min = 1, max = -1;
      ++pos_;
    } else if (c == '?') {
      min = 0, max = 1;
      ++pos_;
    } else if (c == '{' && quantifier_ahead()) {
      const size_t at = pos_;
      ++pos_;
      min = parse_int();
      max = min;
      if (peek() == ',') {
        ++pos_;
        max = peek() == '}' ? -1 : parse_int();
      }
      ++pos_;  // '}'
      if (max >= 0 && max < min) fail_at(at, "repetition {", min, ",", max, "} has max < min");
    } else {
      return;
    }
    if (peek() == '?') ++pos_;  // lazy: same language
    if (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && quantifier_ahead())) {
      fail("'", peek(), "' has nothing to repeat");
    }
    g_.append_repeat(seq, item, min, max, "regex");
  }

  void parse_group(Alternative& seq, int depth) {
    const size_t at = pos_;
    ++pos_;
    if (peek() == '?') {
      const char k = peek(1);
      if (k == ':') {
        pos_ += 2;
      } else if (k == '=' || k == '!') {
        fail_at(at, "lookahead '(?", k, "' is not supported");
      } else if (k == '<' && (peek(2) == '=' || peek(2) == '!')) {
        fail_at(at, "lookbehind '(?<", peek(2), "' is not supported");
      } else if (k == '<') {
        pos_ += 2;
        while (!eof() && peek() != '>') ++pos_;
        if (eof()) fail_at(at, "unterminated group name");
        ++pos_;
      } else {
        fail_at(at, "group '(?", k, "' is not supported");
      }
    }
    const int32_t r = g_.add_rule("regex_group");
    parse_alternation(r, depth + 1);
    if (peek() != ')') fail_at(at, "unterminated group");
    ++pos_;
    seq.push_back(Element{Element::Kind::kRule, r});
  }

  // An escape's code point, or its class in `cls` (returns false then).
  bool parse_escape_atom(char32_t& cp, Ranges& cls, bool& cls_negated, bool in_class) {
    const size_t at = pos_;
    ++pos_;
    if (eof()) fail_at(at, "pattern ends in '\\'");
    const char c = p_[pos_++];
    cls_negated = false;
    switch (c) {
      case 'd':
        cls = kDigit;
        return false;
      case 'w':
        cls = kWord;
        return false;
      case 's':
        cls = kSpace;
        return false;
      case 'D':
        cls = kDigit, cls_negated = true;
        return false;
      case 'W':
        cls = kWord, cls_negated = true;
        return false;
      case 'S':
        cls = kSpace, cls_negated = true;
        return false;
      case 'n':
        cp = '\n';
        return true;
      case 'r':
        cp = '\r';
        return true;
      case 't':
        cp = '\t';
        return true;
      case 'f':
        cp = '\f';
        return true;
      case 'v':
        cp = '\v';
        return true;
      case '0':
        if (peek() >= '0' && peek() <= '9') fail_at(at, "octal escape is not supported");
        cp = 0;
        return true;
      case 'x':
        cp = hex(2, at);
        return true;
      case 'u':
        if (peek() == '{') {
          ++pos_;
          char32_t v = 0;
          size_t n = 0;
          while (!eof() && peek() != '}') {
            v = v * 16 + hex(1, at);
            if (++n > 6) fail_at(at, "bad \\u{...} escape");
          }
          if (eof() || n == 0) fail_at(at, "bad \\u{...} escape");
          ++pos_;
          cp = v;
        } else {
          cp = hex(4, at);
          // A surrogate pair spelled as two escapes is one code point.
          if (cp >= 0xD800 && cp <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
            const size_t save = pos_;
            pos_ += 2;
            const char32_t lo = hex(4, at);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              pos_ = save;
            }
          }
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail_at(at, "escape is no code point");
        return true;
      case 'b':
        if (in_class) {
          cp = '\b';
          return true;
        }
        fail_at(at, "word boundary '\\b' is not supported");
      case 'B':
        fail_at(at, "word boundary '\\B' is not supported");
      case 'k':
        fail_at(at, "backreference '\\k' is not supported");
      case 'c':
        fail_at(at, "control escape '\\c' is not supported");
      case 'p':
      case 'P':
        fail_at(at, "Unicode property escape '\\", c, "' is not supported");
      default:
        if (c >= '1' && c <= '9') fail_at(at, "backreference '\\", c, "' is not supported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
          fail_at(at, "unknown escape '\\", c, "'");
        }
        --pos_;
        cp = next_codepoint();
        return true;
    }
  }

  char32_t hex(int digits, size_t at) {
    char32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int d = hex_digit_value(peek());
      if (d < 0) fail_at(at, "escape needs ", digits, " hex digits");
      v = v * 16 + static_cast<char32_t>(d);
      ++pos_;
    }
    return v;
  }

  void parse_escape(Alternative& seq) {
    char32_t cp = 0;
    Ranges cls;
    bool negated = false;
    if (parse_escape_atom(cp, cls, negated, false)) {
      push_codepoint(cp, seq);
    } else {
      push_class(cls, negated, seq);
    }
  }

  void parse_class(Alternative& seq) {
    const size_t at = pos_;
    ++pos_;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    Ranges ranges;
    // One class atom: a code point (returns true) or a class escape (added to ranges).
    auto atom = [&](char32_t& cp) {
      if (eof()) fail_at(at, "unterminated character class");
      if (peek() != '\\') {
        cp = next_codepoint();
        return true;
      }
      Ranges cls;
      bool neg = false;
      if (parse_escape_atom(cp, cls, neg, true)) return true;
      const Ranges add = neg ? complement(cls) : cls;
      ranges.insert(ranges.end(), add.begin(), add.end());
      return false;
    };
    while (true) {
      if (eof()) fail_at(at, "unterminated character class");
      if (peek() == ']') break;
      char32_t lo = 0;
      if (!atom(lo)) continue;
      if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
        const size_t save = pos_;
        ++pos_;
        char32_t hi = 0;
        if (atom(hi)) {
          if (hi < lo) fail_at(save, "character class range is backwards");
          ranges.push_back({lo, hi});
          continue;
        }
        ranges.push_back({lo, lo});  // [a-\d]: '-' is a literal (Annex B)
        ranges.push_back({'-', '-'});
        continue;
      }
      ranges.push_back({lo, lo});
    }
    ++pos_;
    push_class(ranges, negated, seq);
  }

  std::string_view p_;
  size_t pos_ = 0;
  Grammar g_;
};

}  // namespace

Grammar regex_to_grammar(std::string_view pattern) { return RegexParser(pattern).parse(); }

Grammar choice_to_grammar(std::span<const std::string> choices) {
  VT_CHECK(!choices.empty(), "choice: at least one choice is needed");
  Grammar g;
  g.root = g.add_rule("choice");
  std::vector<Alternative> alts;
  for (const std::string& c : choices) {
    Alternative a;
    g.append_literal(c, a);
    alts.push_back(std::move(a));
  }
  g.rules[static_cast<size_t>(g.root)].alternatives = std::move(alts);
  return g;
}

}  // namespace vtllm::structured
