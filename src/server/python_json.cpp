#include "server/python_json.h"

#include <cstdint>
#include <cstdio>

namespace vtllm::server {

namespace {

void dump_to(const nlohmann::ordered_json& v, std::string& out) {
  using nlohmann::ordered_json;
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += ordered_json(it.key()).dump(-1, ' ', false, ordered_json::error_handler_t::replace);
      out += ": ";
      dump_to(it.value(), out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    bool first = true;
    for (const auto& x : v) {
      if (!first) out += ", ";
      first = false;
      dump_to(x, out);
    }
    out += ']';
  } else {
    // Scalars: nlohmann writes strings with the escapes Python uses (\" \\ \n \r \t \b \f,
    // \u00xx for other control characters) and doubles as the shortest round-trip text.
    out += v.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  }
}

enum class Scan { kDone, kMore, kInvalid };

constexpr int kMaxDepth = 512;

bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Appends code point `cp` as nlohmann's dump writes it in a string (ensure_ascii off).
void put_char(uint32_t cp, std::string& out) {
  static const char* const kShort[] = {nullptr, nullptr, nullptr, nullptr, nullptr,
                                       nullptr, nullptr, nullptr, "\\b",   "\\t",
                                       "\\n",   nullptr, "\\f",   "\\r"};
  if (cp < 0x20) {
    if (cp < 14 && kShort[cp]) {
      out += kShort[cp];
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
      out += buf;
    }
  } else if (cp == '"') {
    out += "\\\"";
  } else if (cp == '\\') {
    out += "\\\\";
  } else if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// A recursive-descent reader over the start of a JSON text that writes the settled part
// of its python_json_dumps (`out` null: only reads). It accepts what nlohmann's parser
// accepts, so a value it completes dumps as the parsed value does.
class PrefixReader {
 public:
  explicit PrefixReader(std::string_view s) : s_(s) {}
  size_t pos() const { return i_; }

  Scan value(std::string* out, int depth = 0) {
    space();
    if (i_ == s_.size()) return Scan::kMore;
    const char c = s_[i_];
    if (c == '{' || c == '[') {
      if (depth >= kMaxDepth) return Scan::kMore;
      return c == '{' ? object(out, depth) : array(out, depth);
    }
    if (c == '"') return string(out, nullptr);
    if (c == '-' || (c >= '0' && c <= '9')) return number(out);
    if (c == 't') return literal("true", out);
    if (c == 'f') return literal("false", out);
    if (c == 'n') return literal("null", out);
    return Scan::kInvalid;
  }

  // At '"': the string; `decoded` gets its characters.
  Scan string(std::string* out, std::string* decoded) {
    ++i_;
    if (out) *out += '"';
    std::string tmp;
    std::string& d = decoded ? *decoded : tmp;
    while (true) {
      if (i_ == s_.size()) return Scan::kMore;
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      uint32_t cp = 0;
      size_t len = 1;
      if (c == '"') {
        ++i_;
        if (out) *out += '"';
        return Scan::kDone;
      } else if (c == '\\') {
        if (i_ + 1 == s_.size()) return Scan::kMore;
        const char e = s_[i_ + 1];
        len = 2;
        switch (e) {
          case '"':
            cp = '"';
            break;
          case '\\':
            cp = '\\';
            break;
          case '/':
            cp = '/';
            break;
          case 'b':
            cp = '\b';
            break;
          case 'f':
            cp = '\f';
            break;
          case 'n':
            cp = '\n';
            break;
          case 'r':
            cp = '\r';
            break;
          case 't':
            cp = '\t';
            break;
          case 'u': {
            const Scan h = hex4(i_ + 2, cp);
            if (h != Scan::kDone) return h;
            len = 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return Scan::kInvalid;
            if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate: its pair follows
              for (size_t k = 0; k < 2; ++k) {
                if (i_ + 6 + k == s_.size()) return Scan::kMore;
                if (s_[i_ + 6 + k] != "\\u"[k]) return Scan::kInvalid;
              }
              uint32_t lo = 0;
              const Scan l = hex4(i_ + 8, lo);
              if (l != Scan::kDone) return l;
              if (lo < 0xDC00 || lo > 0xDFFF) return Scan::kInvalid;
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              len = 12;
            }
            break;
          }
          default:
            return Scan::kInvalid;
        }
      } else if (c < 0x20) {
        return Scan::kInvalid;
      } else if (c < 0x80) {
        cp = c;
      } else {
        // UTF-8 as nlohmann validates it (RFC 3629: no overlongs, no surrogates).
        len = c >= 0xC2 && c <= 0xDF   ? 2
              : c >= 0xE0 && c <= 0xEF ? 3
              : c >= 0xF0 && c <= 0xF4 ? 4
                                       : 0;
        if (len == 0) return Scan::kInvalid;
        cp = c & (0x7F >> len);
        for (size_t k = 1; k < len; ++k) {
          if (i_ + k == s_.size()) return Scan::kMore;
          const unsigned char b = static_cast<unsigned char>(s_[i_ + k]);
          unsigned lo = 0x80, hi = 0xBF;
          if (k == 1 && c == 0xE0) lo = 0xA0;
          if (k == 1 && c == 0xED) hi = 0x9F;
          if (k == 1 && c == 0xF0) lo = 0x90;
          if (k == 1 && c == 0xF4) hi = 0x8F;
          if (b < lo || b > hi) return Scan::kInvalid;
          cp = (cp << 6) | (b & 0x3F);
        }
      }
      i_ += len;
      if (out) put_char(cp, *out);
      put_char_raw(cp, d);
    }
  }

 private:
  static void put_char_raw(uint32_t cp, std::string& d) {
    if (cp < 0x80) {
      d += char(cp);
    } else {
      std::string tmp;
      put_char(cp, tmp);  // non-ASCII: written raw
      d += tmp;
    }
  }

  void space() {
    while (i_ < s_.size() && json_space(s_[i_])) ++i_;
  }

  Scan hex4(size_t at, uint32_t& cp) {
    cp = 0;
    for (size_t k = 0; k < 4; ++k) {
      if (at + k >= s_.size()) return Scan::kMore;
      const int h = hex_digit(s_[at + k]);
      if (h < 0) return Scan::kInvalid;
      cp = cp * 16 + uint32_t(h);
    }
    return Scan::kDone;
  }

  Scan object(std::string* out, int depth) {
    ++i_;
    if (out) *out += '{';
    space();
    if (i_ == s_.size()) return Scan::kMore;
    if (s_[i_] == '}') return close('}', out);
    while (true) {
      space();
      if (i_ == s_.size()) return Scan::kMore;
      if (s_[i_] != '"') return Scan::kInvalid;
      if (Scan k = string(out, nullptr); k != Scan::kDone) return k;
      if (Scan k = colon(out); k != Scan::kDone) return k;
      if (Scan v = value(out, depth + 1); v != Scan::kDone) return v;
      if (Scan n = after_item('}', out); n != Scan::kMore) return n;
      if (i_ == s_.size()) return Scan::kMore;
    }
  }

  Scan array(std::string* out, int depth) {
    ++i_;
    if (out) *out += '[';
    space();
    if (i_ == s_.size()) return Scan::kMore;
    if (s_[i_] == ']') return close(']', out);
    while (true) {
      if (Scan v = value(out, depth + 1); v != Scan::kDone) return v;
      if (Scan n = after_item(']', out); n != Scan::kMore) return n;
      if (i_ == s_.size()) return Scan::kMore;
    }
  }

  Scan close(char c, std::string* out) {
    ++i_;
    if (out) *out += c;
    return Scan::kDone;
  }

  // After a member or element: `c` closes the container (kDone); a ',' is read and the
  // container goes on (kMore, with input left or not); anything else is invalid.
  Scan after_item(char c, std::string* out) {
    space();
    if (i_ == s_.size()) return Scan::kMore;
    if (s_[i_] == c) return close(c, out);
    if (s_[i_] != ',') return Scan::kInvalid;
    ++i_;
    if (out) *out += ", ";
    return Scan::kMore;
  }

  Scan colon(std::string* out) {
    space();
    if (i_ == s_.size()) return Scan::kMore;
    if (s_[i_] != ':') return Scan::kInvalid;
    ++i_;
    if (out) *out += ": ";
    return Scan::kDone;
  }

  Scan number(std::string* out) {
    size_t e = i_;
    while (e < s_.size() &&
           std::string_view("0123456789+-.eE").find(s_[e]) != std::string_view::npos)
      ++e;
    if (e == s_.size()) return Scan::kMore;  // more digits may follow
    try {
      const nlohmann::ordered_json v = nlohmann::ordered_json::parse(s_.substr(i_, e - i_));
      if (!v.is_number()) return Scan::kInvalid;
      if (out) dump_to(v, *out);
    } catch (const nlohmann::ordered_json::exception&) {
      return Scan::kInvalid;
    }
    i_ = e;
    return Scan::kDone;
  }

  Scan literal(std::string_view word, std::string* out) {
    for (size_t k = 0; k < word.size(); ++k) {
      if (i_ + k == s_.size()) return Scan::kMore;
      if (s_[i_ + k] != word[k]) return Scan::kInvalid;
    }
    i_ += word.size();
    if (out) *out += word;
    return Scan::kDone;
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

std::string python_json_dumps(const nlohmann::ordered_json& v) {
  std::string out;
  dump_to(v, out);
  return out;
}

JsonDumpPrefix python_json_dumps_prefix(std::string_view text) {
  JsonDumpPrefix r;
  PrefixReader reader(text);
  const Scan s = reader.value(&r.settled);
  r.complete = s == Scan::kDone;
  r.invalid = s == Scan::kInvalid;
  r.end = reader.pos();
  return r;
}

HermesBodyPrefix hermes_body_prefix(std::string_view text) {
  HermesBodyPrefix r;
  size_t i = 0;
  while (i < text.size() && json_space(text[i])) ++i;
  if (i == text.size()) return r;
  if (text[i] != '{') {
    r.invalid = true;
    return r;
  }
  ++i;
  bool first = true;
  while (true) {
    while (i < text.size() && json_space(text[i])) ++i;
    if (i == text.size()) return r;
    if (first && text[i] == '}') return r;  // {}: no name; the object is whole
    if (!first) {
      if (text[i] == '}') return r;
      if (text[i] != ',') {
        r.invalid = true;
        return r;
      }
      ++i;
      while (i < text.size() && json_space(text[i])) ++i;
      if (i == text.size()) return r;
    }
    first = false;
    if (text[i] != '"') {
      r.invalid = true;
      return r;
    }
    PrefixReader key_reader(text.substr(i));
    std::string key;
    const Scan k = key_reader.string(nullptr, &key);
    if (k != Scan::kDone) {
      r.invalid = k == Scan::kInvalid;
      return r;
    }
    i += key_reader.pos();
    while (i < text.size() && json_space(text[i])) ++i;
    if (i == text.size()) return r;
    if (text[i] != ':') {
      r.invalid = true;
      return r;
    }
    ++i;
    while (i < text.size() && json_space(text[i])) ++i;
    if (i == text.size()) return r;
    PrefixReader v(text.substr(i));
    Scan s;
    if (key == "name") {
      if (text[i] != '"') {
        r.invalid = true;  // the whole-text parse drops a call whose name is not a string
        return r;
      }
      std::string name;
      s = v.string(nullptr, &name);
      if (s == Scan::kDone) r.name = std::move(name);
    } else if (key == "arguments") {
      r.arguments.emplace();
      s = v.value(&*r.arguments);
    } else {
      s = v.value(nullptr);
    }
    if (s != Scan::kDone) {
      r.invalid = s == Scan::kInvalid;
      return r;
    }
    i += v.pos();
  }
}

}  // namespace vtllm::server
