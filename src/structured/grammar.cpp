// Grammar helpers (UTF-8 class expansion) and the GBNF parser.
#include "structured/grammar.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "text/utf8.h"

namespace vtllm::structured {
namespace {

constexpr char32_t kMaxCodepoint = 0x10FFFF;
constexpr int kMaxRepeat = 10000;

// Sorted, merged, surrogate-free ranges (complemented first when `negated`).
std::vector<CodepointRange> normalize_ranges(std::span<const CodepointRange> ranges, bool negated) {
  std::vector<CodepointRange> r(ranges.begin(), ranges.end());
  std::sort(r.begin(), r.end());
  std::vector<CodepointRange> merged;
  for (auto [lo, hi] : r) {
    if (!merged.empty() && lo <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, hi);
    } else {
      merged.push_back({lo, hi});
    }
  }
  if (negated) {
    std::vector<CodepointRange> comp;
    char32_t next = 0;
    for (auto [lo, hi] : merged) {
      if (lo > next) comp.push_back({next, lo - 1});
      next = hi + 1;
    }
    if (next <= kMaxCodepoint) comp.push_back({next, kMaxCodepoint});
    merged = std::move(comp);
  }
  std::vector<CodepointRange> out;  // surrogates are not code points UTF-8 encodes
  for (auto [lo, hi] : merged) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      out.push_back({lo, hi});
      continue;
    }
    if (lo < 0xD800) out.push_back({lo, 0xD7FF});
    if (hi > 0xDFFF) out.push_back({0xE000, hi});
  }
  return out;
}

using ByteRangeSeq = std::vector<std::pair<uint8_t, uint8_t>>;

std::string utf8_of(char32_t cp) {
  std::string s;
  text::utf8_append(s, cp);
  return s;
}

// Splits [lo, hi] (one encoded length, no surrogates) into ranges whose UTF-8
// encodings are a cross product of byte ranges.
void utf8_split(char32_t lo, char32_t hi, std::vector<ByteRangeSeq>& out) {
  static constexpr char32_t kLenEnds[] = {0x7F, 0x7FF, 0xFFFF};
  for (char32_t end : kLenEnds) {
    if (lo <= end && hi > end) {
      utf8_split(lo, end, out);
      utf8_split(end + 1, hi, out);
      return;
    }
  }
  if (hi <= 0x7F) {
    out.push_back({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}});
    return;
  }
  for (int i = 1; i < 4; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_split(lo, lo | m, out);
        utf8_split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_split(lo, (hi & ~m) - 1, out);
        utf8_split(hi & ~m, hi, out);
        return;
      }
    }
  }
  const std::string a = utf8_of(lo), b = utf8_of(hi);
  ByteRangeSeq seq;
  for (size_t i = 0; i < a.size(); ++i) {
    seq.push_back({static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])});
  }
  out.push_back(std::move(seq));
}

void append_escaped_byte(std::string& out, int b) {
  static const char* kHex = "0123456789ABCDEF";
  if (b >= 0x21 && b < 0x7F && b != '\\' && b != ']' && b != '[' && b != '-' && b != '^' &&
      b != '"') {
    out += static_cast<char>(b);
  } else {
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
}

}  // namespace

void Grammar::index_names() const {
  if (names_.size() == rules.size()) return;
  names_.clear();
  for (size_t i = 0; i < rules.size(); ++i) names_.emplace(rules[i].name, static_cast<int32_t>(i));
}

int32_t Grammar::find_rule(std::string_view name) const {
  index_names();
  auto it = names_.find(std::string(name));
  if (it != names_.end() && rules[static_cast<size_t>(it->second)].name != name) {
    names_.clear();  // a rule was renamed behind our back
    index_names();
    it = names_.find(std::string(name));
  }
  return it == names_.end() ? -1 : it->second;
}

int32_t Grammar::add_rule(std::string_view name) {
  std::string unique(name);
  for (int n = static_cast<int>(rules.size()); find_rule(unique) >= 0; ++n) {
    unique = str_cat(name, "_", n);
  }
  rules.push_back(Rule{unique, {}});
  names_.emplace(std::move(unique), static_cast<int32_t>(rules.size() - 1));
  return static_cast<int32_t>(rules.size() - 1);
}

Element Grammar::bytes(const ByteSet& set) {
  // Recently added sets are the likeliest matches (literals repeat bytes).
  for (size_t i = byte_sets.size(); i-- > 0;) {
    if (byte_sets[i] == set) return Element{Element::Kind::kBytes, static_cast<int32_t>(i)};
  }
  byte_sets.push_back(set);
  return Element{Element::Kind::kBytes, static_cast<int32_t>(byte_sets.size() - 1)};
}

void Grammar::append_literal(std::string_view literal, Alternative& seq) {
  for (unsigned char c : literal) {
    ByteSet s;
    s.set(c);
    seq.push_back(bytes(s));
  }
}

Element Grammar::codepoint_class(std::span<const CodepointRange> ranges, bool negated,
                                 std::string_view hint) {
  for (auto [lo, hi] : ranges) {
    VT_CHECK(lo <= hi && hi <= kMaxCodepoint, "grammar: bad code point range in class ", hint);
  }
  std::vector<ByteRangeSeq> seqs;
  for (auto [lo, hi] : normalize_ranges(ranges, negated)) utf8_split(lo, hi, seqs);
  const int32_t r = add_rule(hint);
  ByteSet ascii;
  for (const ByteRangeSeq& seq : seqs) {
    if (seq.size() == 1) {  // all one-byte ranges share one alternative
      for (int b = seq[0].first; b <= seq[0].second; ++b) ascii.set(static_cast<size_t>(b));
      continue;
    }
    Alternative alt;
    for (auto [lo, hi] : seq) {
      ByteSet s;
      for (int b = lo; b <= hi; ++b) s.set(static_cast<size_t>(b));
      alt.push_back(bytes(s));
    }
    rules[static_cast<size_t>(r)].alternatives.push_back(std::move(alt));
  }
  if (ascii.any()) {
    const Element e = bytes(ascii);
    auto& alts = rules[static_cast<size_t>(r)].alternatives;
    alts.insert(alts.begin(), Alternative{e});
  }
  return Element{Element::Kind::kRule, r};
}

void Grammar::append_repeat(Alternative& seq, size_t item_start, int min, int max,
                            std::string_view hint) {
  VT_CHECK(item_start < seq.size(), "grammar: repetition of nothing in ", hint);
  VT_CHECK(min >= 0 && (max < 0 || max >= min) && std::max(min, max) <= kMaxRepeat,
           "grammar: bad repetition {", min, ",", max, "} in ", hint);
  Element item;
  if (seq.size() - item_start == 1) {
    item = seq[item_start];
  } else {
    const int32_t r = add_rule(str_cat(hint, "_item"));
    rules[static_cast<size_t>(r)].alternatives.push_back(
        Alternative(seq.begin() + static_cast<ptrdiff_t>(item_start), seq.end()));
    item = Element{Element::Kind::kRule, r};
  }
  seq.resize(item_start);
  for (int i = 0; i < min; ++i) seq.push_back(item);
  if (max < 0) {  // star ::= item star | ""
    const int32_t star = add_rule(str_cat(hint, "_star"));
    rules[static_cast<size_t>(star)].alternatives = {{item, Element{Element::Kind::kRule, star}},
                                                     {}};
    seq.push_back(Element{Element::Kind::kRule, star});
    return;
  }
  // opt_k ::= item opt_{k-1} | ""  (nested, so {0,n} stays unambiguous)
  int32_t inner = -1;
  for (int k = 0; k < max - min; ++k) {
    const int32_t opt = add_rule(str_cat(hint, "_opt"));
    Alternative a{item};
    if (inner >= 0) a.push_back(Element{Element::Kind::kRule, inner});
    rules[static_cast<size_t>(opt)].alternatives = {std::move(a), {}};
    inner = opt;
  }
  if (inner >= 0) seq.push_back(Element{Element::Kind::kRule, inner});
}

std::string Grammar::to_string() const {
  std::string out;
  for (size_t r = 0; r < rules.size(); ++r) {
    out += rules[r].name;
    out += " ::=";
    bool first = true;
    for (const Alternative& alt : rules[r].alternatives) {
      out += first ? " " : " | ";
      first = false;
      if (alt.empty()) out += "\"\"";
      for (size_t i = 0; i < alt.size(); ++i) {
        if (i) out += ' ';
        const Element& e = alt[i];
        if (e.kind == Element::Kind::kRule) {
          out += e.index >= 0 && static_cast<size_t>(e.index) < rules.size()
                     ? rules[static_cast<size_t>(e.index)].name
                     : str_cat("<bad rule ", e.index, ">");
          continue;
        }
        if (e.index < 0 || static_cast<size_t>(e.index) >= byte_sets.size()) {
          out += str_cat("<bad byte set ", e.index, ">");
          continue;
        }
        const ByteSet& s = byte_sets[static_cast<size_t>(e.index)];
        out += '[';
        for (int b = 0; b < 256; ++b) {
          if (!s.test(static_cast<size_t>(b))) continue;
          int e2 = b;
          while (e2 + 1 < 256 && s.test(static_cast<size_t>(e2 + 1))) ++e2;
          append_escaped_byte(out, b);
          if (e2 > b) {
            out += '-';
            append_escaped_byte(out, e2);
          }
          b = e2;
        }
        out += ']';
      }
    }
    if (static_cast<int32_t>(r) == root) out += "  # root";
    out += '\n';
  }
  return out;
}

// ---- GBNF

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Grammar parse(std::string_view root_rule) {
    skip_space(true);
    while (!eof()) {
      parse_rule();
      skip_space(true);
    }
    for (const auto& [name, ref] : refs_) {
      if (!defined_[static_cast<size_t>(ref.rule)]) fail_at(ref.pos, "undefined rule '", name, "'");
    }
    auto root = names_.find(std::string(root_rule));
    g_.root = root == names_.end() ? -1 : root->second;
    if (g_.root < 0 || !defined_[static_cast<size_t>(g_.root)]) {
      throw Error(str_cat("gbnf: no rule named '", root_rule, "' (the start rule)"));
    }
    return std::move(g_);
  }

 private:
  struct Ref {
    int32_t rule;
    size_t pos;  // first reference, for the error
  };

  bool eof() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  template <class... Args>
  [[noreturn]] void fail_at(size_t pos, Args&&... args) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error(str_cat("gbnf:", line, ":", col, ": ", std::forward<Args>(args)...));
  }
  template <class... Args>
  [[noreturn]] void fail(Args&&... args) const {
    fail_at(pos_, std::forward<Args>(args)...);
  }

  void skip_space(bool newlines) {
    while (!eof()) {
      const char c = peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!eof() && peek() != '\n') ++pos_;
      } else if (newlines && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view parse_name() {
    const size_t start = pos_;
    while (!eof() && is_name_char(peek())) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return text_.substr(start, pos_ - start);
  }

  // The rule named `name`, created (undefined) on first mention.
  int32_t rule_named(std::string_view name) {
    auto it = names_.find(std::string(name));
    if (it != names_.end()) return it->second;
    const int32_t r = g_.add_rule(name);
    names_.emplace(std::string(name), r);
    defined_.resize(g_.rules.size(), false);
    return r;
  }

  int32_t fresh_rule(std::string_view hint) {
    const int32_t r = g_.add_rule(hint);
    defined_.resize(g_.rules.size(), false);
    defined_[static_cast<size_t>(r)] = true;
    return r;
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string name(parse_name());
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '", name, "'");
    pos_ += 3;
    skip_space(true);
    const int32_t r = rule_named(name);
    if (defined_[static_cast<size_t>(r)]) fail_at(start, "rule '", name, "' is defined twice");
    defined_[static_cast<size_t>(r)] = true;
    current_ = name;
    parse_alternatives(r, false);
    skip_space(false);
    if (!eof() && peek() != '\n' && peek() != '\r') fail("unexpected '", peek(), "'");
  }

  void parse_alternatives(int32_t rule, bool nested) {
    std::vector<Alternative> alts;
    alts.push_back(parse_sequence(nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(nested));
    }
    g_.rules[static_cast<size_t>(rule)].alternatives = std::move(alts);
  }

  // One code point of a literal or class: an escape or a UTF-8 character.
  char32_t parse_char() {
    if (eof()) fail("unexpected end of input");
    if (peek() == '\\') {
      const size_t at = pos_;
      ++pos_;
      if (eof()) fail("unfinished escape");
      const char c = text_[pos_++];
      switch (c) {
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case 'x':
          return parse_hex(2, at);
        case 'u':
          return parse_hex(4, at);
        case 'U':
          return parse_hex(8, at);
        default:
          if ((c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
              (c >= 0x7B && c <= 0x7E)) {
            return static_cast<unsigned char>(c);
          }
          fail_at(at, "unknown escape '\\", c, "'");
      }
    }
    const size_t n = text::utf8_valid_len(text_, pos_);
    if (n == 0) fail("invalid UTF-8");
    size_t len = 0;
    const char32_t cp = text::utf8_decode(text_, pos_, &len);
    pos_ += len;
    return cp;
  }

  char32_t parse_hex(int digits, size_t at) {
    char32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int d = hex_digit_value(peek());
      if (d < 0) fail_at(at, "escape needs ", digits, " hex digits");
      v = v * 16 + static_cast<char32_t>(d);
      ++pos_;
    }
    if (v > kMaxCodepoint || (v >= 0xD800 && v <= 0xDFFF)) fail_at(at, "escape is no code point");
    return v;
  }

  Alternative parse_sequence(bool nested) {
    Alternative seq;
    size_t last = seq.size();  // start of the last item (for postfix operators)
    bool have_last = false;
    while (true) {
      skip_space(nested);
      if (eof()) break;
      const char c = peek();
      const size_t item_start = seq.size();
      if (c == '"') {
        ++pos_;
        std::string lit;
        while (peek() != '"') {
          if (eof() || peek() == '\n') fail("unterminated string literal");
          text::utf8_append(lit, parse_char());
        }
        ++pos_;
        g_.append_literal(lit, seq);
      } else if (c == '[') {
        const size_t at = pos_;
        ++pos_;
        const bool negated = peek() == '^';
        if (negated) ++pos_;
        std::vector<CodepointRange> ranges;
        while (peek() != ']') {
          if (eof() || peek() == '\n') fail_at(at, "unterminated character class");
          const char32_t lo = parse_char();
          char32_t hi = lo;
          if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
            ++pos_;
            hi = parse_char();
            if (hi < lo) fail_at(at, "character class range is backwards");
          }
          ranges.push_back({lo, hi});
        }
        ++pos_;
        seq.push_back(g_.codepoint_class(ranges, negated, str_cat(current_, "_class")));
      } else if (c == '.') {
        ++pos_;
        seq.push_back(g_.codepoint_class({}, true, str_cat(current_, "_any")));
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        const int32_t sub = fresh_rule(str_cat(current_, "_group"));
        parse_alternatives(sub, true);
        skip_space(true);
        if (peek() != ')') fail("expected ')'");
        ++pos_;
        seq.push_back(Element{Element::Kind::kRule, sub});
      } else if (is_name_char(c)) {
        const size_t at = pos_;
        const std::string_view name = parse_name();
        const size_t save = pos_;
        skip_space(nested);
        if (text_.substr(pos_, 3) == "::=") {
          // The next rule's head: this rule ended at a newline we were allowed to skip.
          pos_ = at;
          break;
        }
        pos_ = save;
        const int32_t r = rule_named(name);
        refs_.emplace(std::string(name), Ref{r, at});
        seq.push_back(Element{Element::Kind::kRule, r});
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_last) fail("'", c, "' has nothing to repeat");
        apply_postfix(seq, last);
        continue;
      } else {
        break;
      }
      last = item_start;
      have_last = true;
    }
    return seq;
  }

  int parse_int() {
    const size_t start = pos_;
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeat) fail("repetition count above ", kMaxRepeat);
      ++pos_;
    }
    if (pos_ == start) fail("expected a number");
    return static_cast<int>(v);
  }

  // Replaces seq[last..] (one item) by its repetition.
  void apply_postfix(Alternative& seq, size_t last) {
    const size_t at = pos_;
    int min = 0, max = -1;  // max -1: unbounded
    const char c = text_[pos_++];
    if (c == '*') {
      min = 0;
    } else if (c == '+') {
      min = 1;
    } else if (c == '?') {
      max = 1;
    } else {
      skip_space(true);
      min = parse_int();
      skip_space(true);
      if (peek() == ',') {
        ++pos_;
        skip_space(true);
        if (peek() != '}') max = parse_int();
      } else {
        max = min;
      }
      skip_space(true);
      if (peek() != '}') fail("expected '}'");
      ++pos_;
      if (max >= 0 && max < min) fail_at(at, "repetition {", min, ",", max, "} has max < min");
    }
    g_.append_repeat(seq, last, min, max, current_);
  }

  std::string_view text_;
  size_t pos_ = 0;
  Grammar g_;
  std::unordered_map<std::string, int32_t> names_;
  std::vector<bool> defined_;
  std::unordered_map<std::string, Ref> refs_;
  std::string current_ = "rule";
};

}  // namespace

Grammar parse_gbnf(std::string_view text, std::string_view root_rule) {
  return GbnfParser(text).parse(root_rule);
}

}  // namespace vtllm::structured
