#include "text/jinja/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "text/jinja/pystr.h"

namespace vtllm::jinja {

namespace {

[[noreturn]] void type_error(const std::string& msg) { throw TemplateError(TemplateError::Kind::Runtime, msg); }

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  char buf[16];
  auto escape_u = [&](unsigned v) {
    std::snprintf(buf, sizeof buf, "\\u%04x", v);
    out += buf;
  };
  // The escapes both modes share (the quote, the backslash, control characters).
  auto escape_common = [&](char32_t c) {
    switch (c) {
      case '"': out += "\\\""; return true;
      case '\\': out += "\\\\"; return true;
      case '\n': out += "\\n"; return true;
      case '\r': out += "\\r"; return true;
      case '\t': out += "\\t"; return true;
      case '\b': out += "\\b"; return true;
      case '\f': out += "\\f"; return true;
      default:
        if (c >= 0x20) return false;
        escape_u(static_cast<unsigned>(c));
        return true;
    }
  };
  if (!ensure_ascii) {
    for (char ch : s)
      if (!escape_common(static_cast<unsigned char>(ch))) out.push_back(ch);
  } else {
    for (char32_t c : py::decode(s)) {
      if (escape_common(c)) continue;
      if (c < 0x7F) {
        out.push_back(static_cast<char>(c));
      } else if (c < 0x10000) {
        escape_u(static_cast<unsigned>(c));
      } else {
        char32_t v = c - 0x10000;
        escape_u(0xD800 | static_cast<unsigned>(v >> 10));
        escape_u(0xDC00 | static_cast<unsigned>(v & 0x3FF));
      }
    }
  }
  out.push_back('"');
}

std::string float_json(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f < 0 ? "-Infinity" : "Infinity";
  return float_repr(f);
}

class Dumper {
 public:
  explicit Dumper(const JsonOptions& o) : o_(o) {}

  void dump(std::string& out, const Value& v, int level) {
    if (level > kMaxNesting) type_error("tojson: value nests too deeply");
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.as_int()); return;
      case Value::Kind::Float: out += float_json(v.as_float()); return;
      case Value::Kind::String: dump_string(out, v.as_string(), o_.ensure_ascii); return;
      case Value::Kind::List:
      case Value::Kind::Tuple: {
        const auto& items = v.items();
        if (items.empty()) {
          out += "[]";
          return;
        }
        out.push_back('[');
        std::string sep = open(out, level);
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += sep;
          dump(out, items[i], level + 1);
        }
        close(out, level);
        out.push_back(']');
        return;
      }
      case Value::Kind::Dict: {
        const auto& entries = v.dict().entries;
        if (entries.empty()) {
          out += "{}";
          return;
        }
        std::vector<const std::pair<Value, Value>*> order;
        for (const auto& e : entries) order.push_back(&e);
        if (o_.sort_keys) {
          std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
            if (a->first.is_string() && b->first.is_string()) return a->first.as_string() < b->first.as_string();
            if (a->first.is_number() && b->first.is_number()) return a->first.to_double() < b->first.to_double();
            type_error(str_cat("'<' not supported between instances of '", b->first.type_name(), "' and '",
                               a->first.type_name(), "'"));
          });
        }
        out.push_back('{');
        std::string sep = open(out, level);
        bool first = true;
        for (const auto* e : order) {
          if (!first) out += sep;
          first = false;
          dump_string(out, key_string(e->first), o_.ensure_ascii);
          out += o_.key_separator;
          dump(out, e->second, level + 1);
        }
        close(out, level);
        out.push_back('}');
        return;
      }
      default: type_error(str_cat("Object of type ", v.type_name(), " is not JSON serializable"));
    }
  }

 private:
  // After '[' or '{': the newline and indent, and the separator between items.
  std::string open(std::string& out, int level) {
    if (!o_.has_indent) return o_.item_separator;
    std::string nl = "\n";
    for (int i = 0; i <= level; ++i) nl += o_.indent;
    out += nl;
    return o_.item_separator + nl;
  }

  void close(std::string& out, int level) {
    if (!o_.has_indent) return;
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += o_.indent;
  }

  static std::string key_string(const Value& k) {
    switch (k.kind()) {
      case Value::Kind::String: return k.as_string();
      case Value::Kind::Int: return std::to_string(k.as_int());
      case Value::Kind::Float: return float_json(k.as_float());
      case Value::Kind::Bool: return k.as_bool() ? "true" : "false";
      case Value::Kind::None: return "null";
      default: type_error(str_cat("keys must be str, int, float, bool or None, not ", k.type_name()));
    }
  }

  const JsonOptions& o_;
};

Value from_json(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxNesting) type_error(str_cat("JSON nests more than ", kMaxNesting, " levels deep"));
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) type_error(str_cat("JSON integer ", u, " is beyond 64 bits"));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json(x, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      DictData d;
      for (const auto& [k, x] : j.items()) d.set(Value(k), from_json(x, depth + 1));
      return Value::mapping(std::move(d));
    }
    default: type_error("unsupported JSON value");
  }
}

}  // namespace

std::string json_dumps(const Value& v, const JsonOptions& options) {
  std::string out;
  Dumper(options).dump(out, v, 0);
  return out;
}

Value json_loads(std::string_view text) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    type_error(str_cat("invalid JSON: ", e.what()));
  }
  return from_json(j, 0);
}

}  // namespace vtllm::jinja
