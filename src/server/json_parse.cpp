#include "server/json_parse.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "text/utf8.h"

namespace vtllm::server {
namespace {

using nlohmann::json;

// Whether c is an ASCII digit.
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Whether byte c ends a run of plain string bytes: '"', '\\', a control
// (< 0x20, which JSON rejects raw) or non-ASCII (checked as UTF-8, then kept).
bool is_special(uint8_t c) { return c == '"' || c == '\\' || c < 0x20 || c >= 0x80; }

// The high bit of each special byte of the 8 bytes in w. Borrows may also flag
// bytes above the first special one, so only the lowest set bit is exact.
uint64_t special_bytes(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  const uint64_t quote = w ^ (kOnes * '"');  // 0 where a byte is '"'
  const uint64_t backslash = w ^ (kOnes * '\\');
  // x - 1 & ~x has a byte's high bit set where x's byte is 0.
  const uint64_t quotes = (quote - kOnes) & ~quote;
  const uint64_t backslashes = (backslash - kOnes) & ~backslash;
  const uint64_t outside = (w - kOnes * 0x20) | w;  // bytes < 0x20 or >= 0x80
  return (quotes | backslashes | outside) & kHigh;
}

// The first special byte in [p, end), or end: 8 bytes a step on little-endian machines.
const char* find_special(const char* p, const char* end) {
  if constexpr (std::endian::native == std::endian::little) {
    for (; end - p >= 8; p += 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      if (const uint64_t m = special_bytes(w)) return p + std::countr_zero(m) / 8;
    }
  }
  while (p < end && !is_special(static_cast<uint8_t>(*p))) ++p;
  return p;
}

// The value of the 4 hex digits at p (either case), -1 if there are not 4.
int hex4(const char* p, const char* end) {
  if (end - p < 4) return -1;
  int v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = p[i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return -1;
    }
    v = v * 16 + d;
  }
  return v;
}

// For a number std::from_chars found out of double's range: whether it is too
// large (nlohmann rejects the infinity strtod gives) rather than too small (±0).
// Out of range means beyond 1e308 or below 1e-323, so the decimal exponent of
// its leading non-zero digit tells which. [int_begin, int_end) is the integer
// part, end the end of the number.
bool too_large(const char* int_begin, const char* int_end, const char* end) {
  int64_t e10 = -1;
  const char* p = int_end;
  if (*int_begin != '0') {
    e10 = int_end - int_begin - 1;
  } else if (p < end && *p == '.') {
    for (++p; p < end && *p == '0'; ++p) --e10;
  }
  while (p < end && *p != 'e' && *p != 'E') ++p;
  if (p == end) return e10 > 0;
  ++p;
  const bool negative = *p == '-';
  if (*p == '-' || *p == '+') ++p;
  int64_t exp = 0;
  for (; p < end; ++p) exp = std::min<int64_t>(exp * 10 + (*p - '0'), int64_t{1} << 40);
  return e10 + (negative ? -exp : exp) > 0;
}

// One parse of one text; each method reads from p_ and returns false (or
// nullptr) where nlohmann would report a parse error.
class Parser {
 public:
  explicit Parser(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  // The whole text as one JSON value.
  std::optional<json> document();

 private:
  // Skips JSON whitespace (space, tab, LF, CR).
  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  // Consumes c (after whitespace) if it is next.
  bool take(char c) {
    skip_space();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  // Consumes `word` (true, false, null) if it is next.
  bool literal(std::string_view word);
  // Reads a string whose opening quote is consumed, appending its value to out.
  bool string(std::string& out);
  // Reads the escape whose backslash is consumed, appending what it stands for.
  bool escape(std::string& out);
  // Reads a number starting at p_ into v.
  bool number(json& v);
  // Reads `"key":` into `object` and returns the slot its value goes in.
  json* member(json& object);
  // Reads a scalar, or opens a container: sets it empty in v and returns true
  // with `opened` set, unless it closes at once.
  bool value(json& v, bool& opened);

  const char* p_;
  const char* end_;
};

bool Parser::literal(std::string_view word) {
  if (static_cast<size_t>(end_ - p_) < word.size() ||
      std::memcmp(p_, word.data(), word.size()) != 0) {
    return false;
  }
  p_ += word.size();
  return true;
}

bool Parser::string(std::string& out) {
  const char* run = p_;  // plain bytes not yet appended
  for (;;) {
    const char* q = find_special(p_, end_);
    if (q == end_) return false;
    const auto c = static_cast<uint8_t>(*q);
    if (c == '"') {
      out.append(run, q);
      p_ = q + 1;
      return true;
    }
    if (c >= 0x80) {
      // RFC 3629's table, the one nlohmann's lexer checks strings against.
      const size_t n = text::utf8_valid_len(std::string_view(q, size_t(end_ - q)), 0);
      if (n == 0) return false;
      p_ = q + n;
      continue;
    }
    if (c != '\\') return false;
    out.append(run, q);
    p_ = q + 1;
    if (!escape(out)) return false;
    run = p_;
  }
}

bool Parser::escape(std::string& out) {
  if (p_ == end_) return false;
  switch (*p_++) {
    case '"':
      out += '"';
      return true;
    case '\\':
      out += '\\';
      return true;
    case '/':
      out += '/';
      return true;
    case 'b':
      out += '\b';
      return true;
    case 'f':
      out += '\f';
      return true;
    case 'n':
      out += '\n';
      return true;
    case 'r':
      out += '\r';
      return true;
    case 't':
      out += '\t';
      return true;
    case 'u':
      break;
    default:
      return false;
  }
  int cp = hex4(p_, end_);
  if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) return false;
  p_ += 4;
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    // A high surrogate must be followed at once by an escaped low one.
    if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
    const int low = hex4(p_ + 2, end_);
    if (low < 0xDC00 || low > 0xDFFF) return false;
    p_ += 6;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  }
  text::utf8_append(out, char32_t(cp));
  return true;
}

bool Parser::number(json& v) {
  const char* const start = p_;
  const char* p = p_;
  const bool negative = *p == '-';
  if (negative) ++p;
  const char* const int_begin = p;
  if (p == end_ || !is_digit(*p)) return false;
  if (*p == '0') {
    ++p;  // a leading zero is the whole integer part ("01" is two values)
  } else {
    while (p < end_ && is_digit(*p)) ++p;
  }
  const char* const int_end = p;
  bool integral = true;
  if (p < end_ && *p == '.') {
    integral = false;
    if (++p == end_ || !is_digit(*p)) return false;
    while (p < end_ && is_digit(*p)) ++p;
  }
  if (p < end_ && (*p == 'e' || *p == 'E')) {
    integral = false;
    if (++p < end_ && (*p == '+' || *p == '-')) ++p;
    if (p == end_ || !is_digit(*p)) return false;
    while (p < end_ && is_digit(*p)) ++p;
  }
  p_ = p;
  if (integral) {
    // nlohmann: strtoull / strtoll, falling back to a float where they overflow.
    uint64_t u;
    if (std::from_chars(int_begin, int_end, u).ec == std::errc()) {
      if (!negative) {
        v = json::number_unsigned_t{u};
        return true;
      }
      if (u <= uint64_t{1} << 63) {
        v = static_cast<json::number_integer_t>(0 - u);  // modular: -2^63 is 2^63
        return true;
      }
    }
  }
  double d;
  const auto [end, ec] = std::from_chars(start, p, d);
  if (ec == std::errc::result_out_of_range) {
    if (too_large(int_begin, int_end, p)) return false;
    d = negative ? -0.0 : 0.0;
  } else if (ec != std::errc() || end != p) {
    return false;
  }
  v = d;
  return true;
}

json* Parser::member(json& object) {
  if (!take('"')) return nullptr;
  std::string key;
  if (!string(key) || !take(':')) return nullptr;
  // operator[] keeps the first key's place; the value written later replaces
  // the old one, so a repeated key's last value wins, as in nlohmann.
  return &object.get_ref<json::object_t&>()[std::move(key)];
}

bool Parser::value(json& v, bool& opened) {
  opened = false;
  skip_space();
  if (p_ == end_) return false;
  switch (*p_) {
    case '{':
      ++p_;
      v = json::object();
      opened = !take('}');
      return true;
    case '[':
      ++p_;
      v = json::array();
      opened = !take(']');
      return true;
    case '"':
      ++p_;
      v = json::string_t();
      return string(v.get_ref<json::string_t&>());
    case 't':
      v = true;
      return literal("true");
    case 'f':
      v = false;
      return literal("false");
    case 'n':
      v = nullptr;
      return literal("null");
    default:
      return (*p_ == '-' || is_digit(*p_)) && number(v);
  }
}

std::optional<json> Parser::document() {
  if (end_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) p_ += 3;  // nlohmann skips a BOM
  json root;
  std::vector<json*> open;  // containers not yet closed, innermost last
  json* slot = &root;       // where the next value goes
  for (;;) {
    bool opened;
    if (!value(*slot, opened)) return std::nullopt;
    if (opened) {
      // Its first element: a container's parent is left alone until it closes,
      // so the pointers in `open` stay valid.
      open.push_back(slot);
      slot = slot->is_array() ? &slot->get_ref<json::array_t&>().emplace_back() : member(*slot);
      if (slot == nullptr) return std::nullopt;
      continue;
    }
    // A value is complete: close containers until one takes another element.
    for (slot = nullptr; slot == nullptr;) {
      if (open.empty()) {
        // nlohmann's lexer reads a NUL byte outside a string as the end of input.
        skip_space();
        if (p_ != end_ && *p_ != '\0') return std::nullopt;
        return root;
      }
      json& top = *open.back();
      if (take(',')) {
        slot = top.is_array() ? &top.get_ref<json::array_t&>().emplace_back() : member(top);
        if (slot == nullptr) return std::nullopt;
      } else if (take(top.is_array() ? ']' : '}')) {
        open.pop_back();
      } else {
        return std::nullopt;
      }
    }
  }
}

}  // namespace

std::optional<json> parse_json(std::string_view text) { return Parser(text).document(); }

}  // namespace vtllm::server
