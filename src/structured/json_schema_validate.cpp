// The validator: a direct recursive walk of schema and instance, keyword by keyword.
#include "structured/json_schema_validate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <string_view>

#include "base/error.h"

namespace vtllm::structured {
namespace {

using Json = nlohmann::json;
using Result = std::optional<SchemaViolation>;

std::string token(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

size_t code_point_count(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool digits(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

int number_at(std::string_view s, size_t at, size_t n) {
  int v = 0;
  for (size_t i = at; i < at + n; ++i) v = v * 10 + (s[i] - '0');
  return v;
}

// RFC 3339 full-date.
bool is_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  if (!digits(s, 0, 4) || !digits(s, 5, 2) || !digits(s, 8, 2)) return false;
  int y = number_at(s, 0, 4), m = number_at(s, 5, 2), d = number_at(s, 8, 2);
  if (m < 1 || m > 12 || d < 1) return false;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

// RFC 3339 full-time (hh:mm:ss[.frac](Z|+hh:mm)); leap seconds are not accepted.
bool is_time(std::string_view s) {
  if (s.size() < 9 || s[2] != ':' || s[5] != ':') return false;
  if (!digits(s, 0, 2) || !digits(s, 3, 2) || !digits(s, 6, 2)) return false;
  if (number_at(s, 0, 2) > 23 || number_at(s, 3, 2) > 59 || number_at(s, 6, 2) > 59) return false;
  size_t i = 8;
  if (s[i] == '.') {
    size_t start = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) return false;
  }
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) return i + 1 == s.size();
  if (i + 6 != s.size() || (s[i] != '+' && s[i] != '-') || s[i + 3] != ':') return false;
  return digits(s, i + 1, 2) && digits(s, i + 4, 2) && number_at(s, i + 1, 2) <= 23 &&
         number_at(s, i + 4, 2) <= 59;
}

bool is_date_time(std::string_view s) {
  return s.size() > 11 && (s[10] == 'T' || s[10] == 't') && is_date(s.substr(0, 10)) &&
         is_time(s.substr(11));
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

bool is_uuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !is_hex(s[i])) return false;
  }
  return true;
}

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Dot-atom local part, '@', a domain of two or more LDH labels.
bool is_email(std::string_view s) {
  size_t at = s.find('@');
  if (at == std::string_view::npos || at == 0 || s.find('@', at + 1) != std::string_view::npos) {
    return false;
  }
  std::string_view local = s.substr(0, at), domain = s.substr(at + 1);
  static const std::string_view kAtext = "!#$%&'*+/=?^_`{|}~-";
  char prev = '.';
  for (char c : local) {
    if (c == '.') {
      if (prev == '.') return false;
    } else if (!is_alnum(c) && kAtext.find(c) == std::string_view::npos) {
      return false;
    }
    prev = c;
  }
  if (prev == '.') return false;
  int labels = 0;
  size_t start = 0;
  while (true) {
    size_t end = domain.find('.', start);
    std::string_view label =
        domain.substr(start, end == std::string_view::npos ? end : end - start);
    if (label.empty() || label.size() > 63 || !is_alnum(label.front()) || !is_alnum(label.back())) {
      return false;
    }
    for (char c : label) {
      if (!is_alnum(c) && c != '-') return false;
    }
    ++labels;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return labels >= 2;
}

bool is_ipv4(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (true) {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    size_t n = i - start;
    if (n == 0 || n > 3 || (n > 1 && s[start] == '0') || number_at(s, start, n) > 255) return false;
    ++parts;
    if (i == s.size()) break;
    if (s[i] != '.' || parts == 4) return false;
    ++i;
  }
  return parts == 4;
}

// scheme ":" then unreserved / reserved characters and %XX escapes (RFC 3986's alphabet).
bool is_uri(std::string_view s) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0 ||
      !std::isalpha(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  for (size_t i = 1; i < colon; ++i) {
    if (!is_alnum(s[i]) && s[i] != '+' && s[i] != '-' && s[i] != '.') return false;
  }
  static const std::string_view kChars = "-._~:/?#[]@!$&'()*+,;=";
  for (size_t i = colon + 1; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size() || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) return false;
      i += 2;
    } else if (!is_alnum(s[i]) && kChars.find(s[i]) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

std::string type_name(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

bool has_type(const Json& v, const std::string& t) {
  if (t == "number") return v.is_number();
  if (t == "integer") {
    return v.is_number_integer() || v.is_number_unsigned() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
            std::isfinite(v.get<double>()));
  }
  return type_name(v) == t || (t == "number" && v.is_number());
}

long double as_number(const Json& v) {
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  return static_cast<long double>(v.get<double>());
}

class Validator {
 public:
  explicit Validator(const Json& root) : root_(root) {}

  Result check(const Json& v, const Json& s, const std::string& ip, const std::string& sp,
               int depth) {
    if (depth > 200) VT_THROW("JSON schema validation: recursion deeper than 200 at #", sp);
    if (s.is_boolean()) {
      if (s.get<bool>()) return {};
      return fail(ip, sp, "schema false allows nothing");
    }
    if (!s.is_object()) return {};
    if (auto r = s.find("$ref"); r != s.end() && r->is_string()) {
      const std::string& ref = r->get_ref<const std::string&>();
      VT_REQUIRE(!ref.empty() && ref[0] == '#', "JSON schema validation: unsupported $ref ", ref);
      const Json* target = nullptr;
      try {
        target = &root_.at(Json::json_pointer(ref.substr(1)));
      } catch (const nlohmann::json::exception&) {
        VT_THROW("JSON schema validation: $ref ", ref, " does not resolve");
      }
      if (auto e = check(v, *target, ip, ref.substr(1), depth + 1)) return e;
    }
    if (auto e = check_type(v, s, ip, sp)) return e;
    if (s.contains("const") && !(v == s["const"]))
      return fail(ip, sp + "/const", "not the const value");
    if (s.contains("enum") && s["enum"].is_array()) {
      bool found = false;
      for (const Json& e : s["enum"]) found = found || v == e;
      if (!found) return fail(ip, sp + "/enum", "not one of the enum values");
    }
    if (auto e = check_combinators(v, s, ip, sp, depth)) return e;
    if (v.is_string()) return check_string(v.get_ref<const std::string&>(), s, ip, sp);
    if (v.is_number()) return check_number(v, s, ip, sp);
    if (v.is_array()) return check_array(v, s, ip, sp, depth);
    if (v.is_object()) return check_object(v, s, ip, sp, depth);
    return {};
  }

 private:
  static Result fail(const std::string& ip, const std::string& sp, const std::string& msg) {
    return SchemaViolation{ip, sp, msg};
  }

  Result check_type(const Json& v, const Json& s, const std::string& ip, const std::string& sp) {
    auto t = s.find("type");
    if (t == s.end()) return {};
    bool ok = false;
    if (t->is_string()) {
      ok = has_type(v, t->get<std::string>());
    } else if (t->is_array()) {
      for (const Json& x : *t) ok = ok || (x.is_string() && has_type(v, x.get<std::string>()));
    } else {
      ok = true;
    }
    if (ok) return {};
    return fail(ip, sp + "/type", "expected type " + t->dump() + ", got " + type_name(v));
  }

  Result check_combinators(const Json& v, const Json& s, const std::string& ip,
                           const std::string& sp, int depth) {
    if (auto a = s.find("allOf"); a != s.end() && a->is_array()) {
      for (size_t i = 0; i < a->size(); ++i) {
        if (auto e = check(v, (*a)[i], ip, str_cat(sp, "/allOf/", i), depth + 1)) return e;
      }
    }
    if (auto a = s.find("anyOf"); a != s.end() && a->is_array()) {
      bool any = false;
      for (size_t i = 0; i < a->size() && !any; ++i) {
        any = !check(v, (*a)[i], ip, str_cat(sp, "/anyOf/", i), depth + 1);
      }
      if (!any) return fail(ip, sp + "/anyOf", "matches none of anyOf");
    }
    if (auto a = s.find("oneOf"); a != s.end() && a->is_array()) {
      int n = 0;
      for (size_t i = 0; i < a->size(); ++i) {
        n += !check(v, (*a)[i], ip, str_cat(sp, "/oneOf/", i), depth + 1);
      }
      if (n != 1) return fail(ip, sp + "/oneOf", str_cat("matches ", n, " of oneOf, not one"));
    }
    if (auto a = s.find("not"); a != s.end()) {
      if (!check(v, *a, ip, sp + "/not", depth + 1)) return fail(ip, sp + "/not", "matches 'not'");
    }
    return {};
  }

  Result check_string(const std::string& v, const Json& s, const std::string& ip,
                      const std::string& sp) {
    size_t n = code_point_count(v);
    if (auto m = s.find("minLength"); m != s.end() && m->is_number() && n < as_number(*m)) {
      return fail(ip, sp + "/minLength", str_cat("string of ", n, " characters is too short"));
    }
    if (auto m = s.find("maxLength"); m != s.end() && m->is_number() && n > as_number(*m)) {
      return fail(ip, sp + "/maxLength", str_cat("string of ", n, " characters is too long"));
    }
    if (auto p = s.find("pattern"); p != s.end() && p->is_string()) {
      std::regex re;
      try {
        re = std::regex(p->get<std::string>(), std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        VT_THROW("JSON schema validation: bad pattern at #", sp, "/pattern: ", e.what());
      }
      if (!std::regex_search(v, re)) return fail(ip, sp + "/pattern", "does not match the pattern");
    }
    if (auto f = s.find("format"); f != s.end() && f->is_string()) {
      const std::string& fmt = f->get_ref<const std::string&>();
      bool ok = fmt == "date"        ? is_date(v)
                : fmt == "time"      ? is_time(v)
                : fmt == "date-time" ? is_date_time(v)
                : fmt == "uuid"      ? is_uuid(v)
                : fmt == "email"     ? is_email(v)
                : fmt == "ipv4"      ? is_ipv4(v)
                : fmt == "uri"       ? is_uri(v)
                                     : true;
      if (!ok) return fail(ip, sp + "/format", "not a valid " + fmt);
    }
    return {};
  }

  Result check_number(const Json& v, const Json& s, const std::string& ip, const std::string& sp) {
    long double x = as_number(v);
    auto bound = [&](const char* key) -> const Json* {
      auto it = s.find(key);
      return it != s.end() && it->is_number() ? &*it : nullptr;
    };
    auto flag = [&](const char* key) {
      auto it = s.find(key);
      return it != s.end() && it->is_boolean() && it->get<bool>();
    };
    if (const Json* b = bound("minimum")) {
      bool excl = flag("exclusiveMinimum");
      if (excl ? x <= as_number(*b) : x < as_number(*b))
        return fail(ip, sp + "/minimum", "below the minimum");
    }
    if (const Json* b = bound("maximum")) {
      bool excl = flag("exclusiveMaximum");
      if (excl ? x >= as_number(*b) : x > as_number(*b))
        return fail(ip, sp + "/maximum", "above the maximum");
    }
    if (const Json* b = bound("exclusiveMinimum"); b && x <= as_number(*b)) {
      return fail(ip, sp + "/exclusiveMinimum", "not above the exclusive minimum");
    }
    if (const Json* b = bound("exclusiveMaximum"); b && x >= as_number(*b)) {
      return fail(ip, sp + "/exclusiveMaximum", "not below the exclusive maximum");
    }
    if (const Json* b = bound("multipleOf"); b && as_number(*b) > 0) {
      long double q = x / as_number(*b);
      if (std::fabs(q - std::round(q)) > 1e-9L * std::max(1.0L, std::fabs(q))) {
        return fail(ip, sp + "/multipleOf", "not a multiple");
      }
    }
    return {};
  }

  Result check_array(const Json& v, const Json& s, const std::string& ip, const std::string& sp,
                     int depth) {
    size_t n = v.size();
    if (auto m = s.find("minItems"); m != s.end() && m->is_number() && n < as_number(*m)) {
      return fail(ip, sp + "/minItems", str_cat("array of ", n, " items is too short"));
    }
    if (auto m = s.find("maxItems"); m != s.end() && m->is_number() && n > as_number(*m)) {
      return fail(ip, sp + "/maxItems", str_cat("array of ", n, " items is too long"));
    }
    // Tuple part: prefixItems (2020-12) or an array-valued items (older drafts).
    const Json* tuple = nullptr;
    const Json* rest = nullptr;
    std::string tuple_key, rest_key;
    auto prefix = s.find("prefixItems"), items = s.find("items");
    auto additional = s.find("additionalItems");
    if (prefix != s.end() && prefix->is_array()) {
      tuple = &*prefix, tuple_key = "prefixItems";
      if (items != s.end()) rest = &*items, rest_key = "items";
    } else if (items != s.end() && items->is_array()) {
      tuple = &*items, tuple_key = "items";
      if (additional != s.end()) rest = &*additional, rest_key = "additionalItems";
    } else if (items != s.end()) {
      rest = &*items, rest_key = "items";
    }
    size_t k = tuple ? tuple->size() : 0;
    for (size_t i = 0; i < n; ++i) {
      std::string at = str_cat(ip, "/", i);
      if (i < k) {
        if (auto e = check(v[i], (*tuple)[i], at, str_cat(sp, "/", tuple_key, "/", i), depth + 1))
          return e;
      } else if (rest) {
        if (rest->is_boolean() && !rest->get<bool>())
          return fail(at, sp + "/" + rest_key, "no items allowed here");
        if (auto e = check(v[i], *rest, at, sp + "/" + rest_key, depth + 1)) return e;
      }
    }
    if (auto u = s.find("uniqueItems"); u != s.end() && u->is_boolean() && u->get<bool>()) {
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = i + 1; j < n; ++j) {
          if (v[i] == v[j]) return fail(str_cat(ip, "/", j), sp + "/uniqueItems", "duplicate item");
        }
      }
    }
    return {};
  }

  Result check_object(const Json& v, const Json& s, const std::string& ip, const std::string& sp,
                      int depth) {
    if (auto r = s.find("required"); r != s.end() && r->is_array()) {
      for (const Json& name : *r) {
        if (name.is_string() && !v.contains(name.get<std::string>())) {
          return fail(ip, sp + "/required",
                      "missing required property '" + name.get<std::string>() + "'");
        }
      }
    }
    if (auto m = s.find("minProperties");
        m != s.end() && m->is_number() && v.size() < as_number(*m)) {
      return fail(ip, sp + "/minProperties", "too few properties");
    }
    if (auto m = s.find("maxProperties");
        m != s.end() && m->is_number() && v.size() > as_number(*m)) {
      return fail(ip, sp + "/maxProperties", "too many properties");
    }
    auto props = s.find("properties");
    auto pattern_props = s.find("patternProperties");
    auto additional = s.find("additionalProperties");
    for (auto it = v.begin(); it != v.end(); ++it) {
      std::string at = ip + "/" + token(it.key());
      bool matched = false;
      if (props != s.end() && props->is_object() && props->contains(it.key())) {
        matched = true;
        if (auto e = check(it.value(), (*props)[it.key()], at,
                           sp + "/properties/" + token(it.key()), depth + 1))
          return e;
      }
      if (pattern_props != s.end() && pattern_props->is_object()) {
        for (auto p = pattern_props->begin(); p != pattern_props->end(); ++p) {
          std::regex re;
          try {
            re = std::regex(p.key(), std::regex::ECMAScript);
          } catch (const std::regex_error& e) {
            VT_THROW("JSON schema validation: bad pattern at #", sp,
                     "/patternProperties: ", e.what());
          }
          if (std::regex_search(it.key(), re)) {
            matched = true;
            if (auto e = check(it.value(), p.value(), at,
                               sp + "/patternProperties/" + token(p.key()), depth + 1))
              return e;
          }
        }
      }
      if (!matched && additional != s.end()) {
        if (additional->is_boolean() && !additional->get<bool>()) {
          return fail(at, sp + "/additionalProperties",
                      "property '" + it.key() + "' is not allowed");
        }
        if (auto e = check(it.value(), *additional, at, sp + "/additionalProperties", depth + 1))
          return e;
      }
    }
    return {};
  }

  const Json& root_;
};

}  // namespace

std::optional<SchemaViolation> validate_json_schema(const nlohmann::json& instance,
                                                    const nlohmann::json& schema) {
  return Validator(schema).check(instance, schema, "", "", 0);
}

}  // namespace vtllm::structured
