#include "text/jinja/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "text/jinja/error.h"
#include "text/jinja/pystr.h"

namespace vtllm::jinja {

std::string normalize_newlines(std::string_view source) {
  std::vector<std::string> lines = py::splitlines(source);
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out.push_back('\n');
    out += lines[i];
  }
  return out;
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexOptions& options) : src_(normalize_newlines(source)), opt_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    bool line_starting = true;
    size_t pos = 0;
    while (pos < src_.size()) {
      size_t tag = find_tag(pos);
      if (tag == std::string::npos) {
        push(Token::Type::Data, src_.substr(pos), pos);
        break;
      }
      char kind = src_[tag + 1];  // '{', '%' or '#'
      char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
      bool raw = kind == '%' && is_raw_begin(tag);
      std::string text = src_.substr(pos, tag - pos);
      text = apply_left_strip(text, sign, kind != '{', line_starting);
      if (!text.empty()) push(Token::Type::Data, text, pos);
      size_t body = tag + 2 + (sign ? 1 : 0);
      if (raw) {
        pos = lex_raw(tag, line_starting);
      } else if (kind == '#') {
        pos = lex_comment(tag, body, line_starting);
      } else {
        pos = lex_tag(kind, tag, body, line_starting);
      }
    }
    Token eof{Token::Type::Eof, "", 0, 0, 0, 0};
    locate(eof, src_.size());
    tokens_.push_back(eof);
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& msg) const {
    Token t{};
    locate(t, pos);
    throw TemplateError(TemplateError::Kind::Syntax, msg, t.line, t.column);
  }

  void locate(Token& t, size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    t.line = static_cast<int>(line);
    t.column = static_cast<int>(pos - line_starts_[line - 1] + 1);
  }

  void push(Token::Type type, std::string text, size_t pos) {
    Token t{type, std::move(text), 0, 0, 0, 0};
    locate(t, pos);
    tokens_.push_back(std::move(t));
  }

  size_t find_tag(size_t pos) const {
    while (true) {
      size_t p = src_.find('{', pos);
      if (p == std::string::npos || p + 1 >= src_.size()) return std::string::npos;
      char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      pos = p + 1;
    }
  }

  // Python's \s at pos (Unicode whitespace); returns its byte length or 0.
  size_t space_at(size_t pos) const {
    unsigned char c = static_cast<unsigned char>(src_[pos]);
    if (c < 0x80) return py::is_space(c) ? 1 : 0;
    size_t len = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    std::vector<char32_t> cp = py::decode(std::string_view(src_).substr(pos, len));
    return cp.size() == 1 && py::is_space(cp[0]) ? len : 0;
  }

  size_t skip_spaces(size_t pos) const {
    while (pos < src_.size()) {
      size_t n = space_at(pos);
      if (!n) break;
      pos += n;
    }
    return pos;
  }

  bool starts_with(size_t pos, std::string_view s) const {
    return src_.compare(pos, s.size(), s) == 0;
  }

  // `{%[-+]?\s*raw\s*(-%}|%})` at tag.
  bool is_raw_begin(size_t tag) const {
    size_t p = tag + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p = skip_spaces(p);
    if (!starts_with(p, "raw")) return false;
    p = skip_spaces(p + 3);
    return starts_with(p, "-%}") || starts_with(p, "%}");
  }

  // The text before a tag: '-' strips all trailing whitespace; lstrip_blocks strips
  // the spaces that precede a block or comment tag on its own line.
  std::string apply_left_strip(const std::string& text, char sign, bool block_or_comment,
                               bool line_starting) const {
    if (sign == '-') return py::strip(text, std::nullopt, false, true);
    if (sign == '+' || !opt_.lstrip_blocks || !block_or_comment) return text;
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting) return text;
    std::string_view tail = std::string_view(text).substr(l_pos);
    if (tail.empty()) return text;
    for (char32_t c : py::decode(tail))
      if (!py::is_space(c)) return text;
    return text.substr(0, l_pos);
  }

  // After a block or comment end: `-` eats whitespace, trim_blocks one newline.
  size_t after_block_end(size_t end, char sign, bool& line_starting) {
    size_t pos = end;
    if (sign == '-') {
      pos = skip_spaces(end);
    } else if (sign != '+' && opt_.trim_blocks && pos < src_.size() && src_[pos] == '\n') {
      ++pos;
    }
    line_starting = pos > 0 && src_[pos - 1] == '\n';
    return pos;
  }

  size_t lex_comment(size_t tag, size_t body, bool& line_starting) {
    size_t q = src_.find("#}", body);
    if (q == std::string::npos) fail(tag, "missing end of comment tag");
    char sign = 0;
    if (q > body && (src_[q - 1] == '-' || src_[q - 1] == '+')) sign = src_[q - 1];
    return after_block_end(q + 2, sign, line_starting);
  }

  size_t lex_raw(size_t tag, bool& line_starting) {
    size_t p = src_.find("%}", tag) + 2;  // is_raw_begin checked the shape
    if (src_[p - 3] == '-') p = skip_spaces(p);
    size_t search = p;
    while (true) {
      size_t q = src_.find("{%", search);
      if (q == std::string::npos) fail(tag, "missing end of raw directive");
      size_t r = q + 2;
      char sign = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r] : 0;
      if (sign) ++r;
      r = skip_spaces(r);
      if (!starts_with(r, "endraw")) {
        search = q + 2;
        continue;
      }
      r = skip_spaces(r + 6);
      char end_sign = 0;
      if (starts_with(r, "+%}") || starts_with(r, "-%}")) {
        end_sign = src_[r];
        r += 1;
      } else if (!starts_with(r, "%}")) {
        search = q + 2;
        continue;
      }
      std::string text = apply_left_strip(src_.substr(p, q - p), sign, true, false);
      if (!text.empty()) push(Token::Type::Data, text, p);
      return after_block_end(r + 2, end_sign, line_starting);
    }
  }

  size_t lex_tag(char kind, size_t tag, size_t pos, bool& line_starting) {
    push(kind == '{' ? Token::Type::VarBegin : Token::Type::BlockBegin, "", tag);
    std::vector<char> balance;
    while (true) {
      if (pos >= src_.size()) fail(tag, kind == '{' ? "unexpected end of template, expected '}}'"
                                                    : "unexpected end of template, expected '%}'");
      if (balance.empty()) {
        if (kind == '{') {
          if (starts_with(pos, "-}}")) {
            push(Token::Type::VarEnd, "", pos);
            size_t end = skip_spaces(pos + 3);
            line_starting = src_[end - 1] == '\n';
            return end;
          }
          if (starts_with(pos, "}}")) {
            push(Token::Type::VarEnd, "", pos);
            line_starting = false;
            return pos + 2;
          }
        } else {
          char sign = 0;
          size_t at = pos;
          if (starts_with(pos, "-%}") || starts_with(pos, "+%}")) sign = src_[at++];
          if (starts_with(at, "%}")) {
            push(Token::Type::BlockEnd, "", pos);
            return after_block_end(at + 2, sign, line_starting);
          }
        }
      }
      if (size_t n = space_at(pos)) {
        pos += n;
        continue;
      }
      pos = lex_one(pos, balance);
    }
  }

  // One name, number, string or operator token inside a tag.
  size_t lex_one(size_t pos, std::vector<char>& balance) {
    char c = src_[pos];
    if (is_digit(c)) return lex_number(pos);
    if (is_name_start(c)) {
      size_t e = pos;
      while (e < src_.size() && is_name_char(src_[e])) ++e;
      push(Token::Type::Name, src_.substr(pos, e - pos), pos);
      return e;
    }
    if (c == '\'' || c == '"') return lex_string(pos);
    static const char* const kOps[] = {"**", "//", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~",
                                       "[",  "]",  "(",  ")",  "{",  "}",  ">", "<", "=", ".", ":", "|",
                                       ",",  ";"};
    for (const char* op : kOps) {
      if (!starts_with(pos, op)) continue;
      std::string o(op);
      if (o == "(" || o == "[" || o == "{") {
        if (balance.size() >= 1024) fail(pos, "brackets nest too deeply (more than 1024)");
        balance.push_back(o == "(" ? ')' : o == "[" ? ']' : '}');
      } else if (o == ")" || o == "]" || o == "}") {
        if (balance.empty()) fail(pos, str_cat("unexpected '", o, "'"));
        if (balance.back() != o[0]) fail(pos, str_cat("unexpected '", o, "', expected '", balance.back(), "'"));
        balance.pop_back();
      }
      push(Token::Type::Op, o, pos);
      return pos + o.size();
    }
    fail(pos, str_cat("unexpected char '", std::string(1, c), "'"));
  }

  // digits with single '_' separators: (\d+_)*\d+ ; returns end or pos when none.
  size_t scan_digits(size_t pos) const {
    size_t e = pos;
    if (e >= src_.size() || !is_digit(src_[e])) return pos;
    while (e < src_.size()) {
      if (is_digit(src_[e])) {
        ++e;
      } else if (src_[e] == '_' && e + 1 < src_.size() && is_digit(src_[e + 1])) {
        ++e;
      } else {
        break;
      }
    }
    return e;
  }

  size_t lex_number(size_t pos) {
    // Jinja2's float_re first (not right after a '.'), then integer_re.
    bool after_dot = pos > 0 && src_[pos - 1] == '.';
    size_t int_end = scan_digits(pos);
    if (!after_dot) {
      size_t e = int_end;
      bool is_float = false;
      if (e < src_.size() && src_[e] == '.' && scan_digits(e + 1) > e + 1) {
        e = scan_digits(e + 1);
        is_float = true;
      }
      if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
        size_t x = e + 1;
        if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
        size_t xe = scan_digits(x);
        if (xe > x) {
          e = xe;
          is_float = true;
        }
      }
      if (is_float) {
        std::string text = src_.substr(pos, e - pos);
        text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
        Token t{Token::Type::Float, text, 0, std::strtod(text.c_str(), nullptr), 0, 0};
        locate(t, pos);
        tokens_.push_back(t);
        return e;
      }
    }
    int base = 10;
    size_t start = pos, e;
    if (src_[pos] == '0' && pos + 1 < src_.size() &&
        (src_[pos + 1] == 'b' || src_[pos + 1] == 'B' || src_[pos + 1] == 'o' || src_[pos + 1] == 'O' ||
         src_[pos + 1] == 'x' || src_[pos + 1] == 'X')) {
      char p = static_cast<char>(src_[pos + 1] | 0x20);
      base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
      e = pos + 2;
      while (e < src_.size()) {
        size_t d = e + (src_[e] == '_' ? 1 : 0);
        if (d >= src_.size() || hex_value(src_[d]) < 0 || hex_value(src_[d]) >= base) break;
        e = d + 1;
      }
      if (e == pos + 2) {
        base = 10;  // "0x" without digits: the integer 0, then a name
        e = pos + 1;
      } else {
        start = pos + 2;
      }
    } else if (src_[pos] == '0') {
      e = pos + 1;
      while (e + 1 < src_.size() && src_[e] == '_' && src_[e + 1] == '0') e += 2;
      while (e < src_.size() && src_[e] == '0') ++e;
    } else {
      e = int_end;
    }
    std::string digits = src_.substr(start, e - start);
    digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
    errno = 0;
    unsigned long long v = std::strtoull(digits.c_str(), nullptr, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
      fail(pos, str_cat("integer literal ", src_.substr(pos, e - pos), " is out of the 64-bit range"));
    Token t{Token::Type::Int, src_.substr(pos, e - pos), static_cast<int64_t>(v), 0, 0, 0};
    locate(t, pos);
    tokens_.push_back(t);
    return e;
  }

  size_t lex_string(size_t pos) {
    char quote = src_[pos];
    size_t e = pos + 1;
    while (e < src_.size() && src_[e] != quote) e += src_[e] == '\\' ? 2 : 1;
    if (e >= src_.size()) fail(pos, str_cat("unexpected char '", std::string(1, quote), "'"));
    std::string value = unescape(pos + 1, e);
    push(Token::Type::String, std::move(value), pos);
    return e + 1;
  }

  // Python's "unicode-escape" decoding of a string literal's body.
  std::string unescape(size_t b, size_t e) const {
    std::string out;
    size_t i = b;
    while (i < e) {
      char c = src_[i];
      if (c != '\\') {
        out.push_back(c);
        ++i;
        continue;
      }
      char n = src_[i + 1];
      i += 2;
      switch (n) {
        case '\\': out.push_back('\\'); continue;
        case '\'': out.push_back('\''); continue;
        case '"': out.push_back('"'); continue;
        case 'a': out.push_back('\a'); continue;
        case 'b': out.push_back('\b'); continue;
        case 'f': out.push_back('\f'); continue;
        case 'n': out.push_back('\n'); continue;
        case 'r': out.push_back('\r'); continue;
        case 't': out.push_back('\t'); continue;
        case 'v': out.push_back('\v'); continue;
        case '\n': continue;
        default: break;
      }
      if (n >= '0' && n <= '7') {
        unsigned v = static_cast<unsigned>(n - '0');
        for (int k = 0; k < 2 && i < e && src_[i] >= '0' && src_[i] <= '7'; ++k, ++i)
          v = v * 8 + static_cast<unsigned>(src_[i] - '0');
        py::append_utf8(out, v);
        continue;
      }
      int digits = n == 'x' ? 2 : n == 'u' ? 4 : n == 'U' ? 8 : 0;
      if (digits) {
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
          int h = i + static_cast<size_t>(k) < e ? hex_value(src_[i + static_cast<size_t>(k)]) : -1;
          if (h < 0) fail(i - 2, str_cat("truncated \\", std::string(1, n), " escape in a string literal"));
          v = v * 16 + static_cast<uint32_t>(h);
        }
        if (v > 0x10FFFF) fail(i - 2, "\\U escape beyond U+10FFFF in a string literal");
        i += static_cast<size_t>(digits);
        py::append_utf8(out, v);
        continue;
      }
      if (n == 'N') fail(i - 2, "\\N{...} escapes are not supported in string literals");
      // An unknown escape keeps its backslash. A non-ASCII character after it was
      // first turned into its \x/\u form by Jinja2's backslashreplace step.
      out.push_back('\\');
      unsigned char un = static_cast<unsigned char>(n);
      if (un < 0x80) {
        out.push_back(n);
        continue;
      }
      size_t len = (un >> 5) == 6 ? 2 : (un >> 4) == 14 ? 3 : (un >> 3) == 30 ? 4 : 1;
      std::vector<char32_t> cp = py::decode(std::string_view(src_).substr(i - 1, len));
      char buf[16];
      if (cp[0] < 0x100)
        std::snprintf(buf, sizeof buf, "x%02x", static_cast<unsigned>(cp[0]));
      else if (cp[0] < 0x10000)
        std::snprintf(buf, sizeof buf, "u%04x", static_cast<unsigned>(cp[0]));
      else
        std::snprintf(buf, sizeof buf, "U%08x", static_cast<unsigned>(cp[0]));
      out += buf;
      i += len - 1;
    }
    return out;
  }

  std::string src_;
  LexOptions opt_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace vtllm::jinja
