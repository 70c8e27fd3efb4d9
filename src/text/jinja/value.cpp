#include "text/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "text/jinja/pystr.h"

namespace vtllm::jinja {

TemplateError::TemplateError(Kind kind, const std::string& message, int line, int column)
    : vtllm::Error(kind == Kind::Raised ? message
                   : line <= 0          ? message
                   : kind == Kind::Syntax
                       ? str_cat("line ", line, ", column ", column, ": ", message)
                       : str_cat("line ", line, ": ", message)),
      kind_(kind),
      message_(message),
      line_(line),
      column_(column) {}

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

const Value* DictData::find_key(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

const std::string& Value::undefined_hint() const {
  static const std::string kNone;
  const std::string* s = std::get_if<std::string>(&data_);
  return s ? *s : kNone;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.data_ = std::move(hint);
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

namespace {

void check_depth(int depth) {
  if (depth > kMaxNesting)
    throw TemplateError(TemplateError::Kind::Limit,
                        str_cat("lists and dicts nest more than ", kMaxNesting, " levels deep"));
}

}  // namespace

int Value::depth() const {
  switch (kind_) {
    case Kind::List:
    case Kind::Tuple: return std::get<std::shared_ptr<ListData>>(data_)->depth;
    case Kind::Dict:
    case Kind::Namespace: return dict().depth;
    default: return 0;
  }
}

Value Value::list(std::vector<Value> items) {
  int depth = 0;
  for (const Value& i : items) depth = std::max(depth, i.depth());
  check_depth(depth + 1);
  Value v;
  v.kind_ = Kind::List;
  v.data_ = std::make_shared<ListData>(ListData{std::move(items), depth + 1});
  return v;
}

Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::Tuple;
  return v;
}

Value Value::mapping(DictData entries) {
  int depth = 0;
  for (const auto& [k, val] : entries.entries) depth = std::max({depth, k.depth(), val.depth()});
  check_depth(depth + 1);
  entries.depth = depth + 1;
  Value v;
  v.kind_ = Kind::Dict;
  v.data_ = std::make_shared<DictData>(std::move(entries));
  return v;
}

Value Value::ns(DictData attributes) {
  Value v = mapping(std::move(attributes));
  v.kind_ = Kind::Namespace;
  return v;
}

Value Value::callable(std::string name, std::function<Value(CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::Callable;
  v.data_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

double Value::to_double() const {
  switch (kind_) {
    case Kind::Int: return static_cast<double>(as_int());
    case Kind::Float: return as_float();
    case Kind::Bool: return as_bool() ? 1.0 : 0.0;
    default: throw TemplateError(TemplateError::Kind::Runtime, str_cat("'", type_name(), "' is not a number"));
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return as_bool();
    case Kind::Int: return as_int() != 0;
    case Kind::Float: return as_float() != 0.0;
    case Kind::String: return !as_string().empty();
    case Kind::List:
    case Kind::Tuple: return !items().empty();
    case Kind::Dict: return !dict().entries.empty();
    case Kind::Namespace:
    case Kind::Callable: return true;
  }
  return false;
}

bool Value::operator==(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (is_float() || o.is_float()) return to_double() == o.to_double();
    int64_t a = is_bool() ? as_bool() : as_int();
    int64_t b = o.is_bool() ? o.as_bool() : o.as_int();
    return a == b;
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return as_string() == o.as_string();
    case Kind::List:
    case Kind::Tuple: return items() == o.items();
    case Kind::Dict: {
      const auto& a = dict().entries;
      const auto& b = o.dict().entries;
      if (a.size() != b.size()) return false;
      for (const auto& [k, v] : a) {
        const Value* ov = o.dict().find(k);
        if (!ov || !(*ov == v)) return false;
      }
      return true;
    }
    case Kind::Namespace: return &dict() == &o.dict();  // identity, as Python compares objects
    case Kind::Callable: return &callable() == &o.callable();
    default: return false;
  }
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
  }
  return "object";
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci: [-]d[.ddd]e[+-]xx
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t epos = sci.find('e');
  std::string digits = sci.substr(0, epos);
  int exp = std::atoi(sci.c_str() + epos + 1);
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  int decpt = exp + 1;
  std::string out = neg ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + ebuf;
}

namespace {

void write_repr(std::string& out, const Value& v, int depth);

void write_str(std::string& out, const Value& v, int depth) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return;
    case Value::Kind::String: out += v.as_string(); return;
    default: write_repr(out, v, depth);
  }
}

void write_repr(std::string& out, const Value& v, int depth) {
  if (depth > kMaxNesting)
    throw TemplateError(TemplateError::Kind::Limit,
                        str_cat("value nests too deeply to print (more than ", kMaxNesting, " levels)"));
  switch (v.kind()) {
    case Value::Kind::Undefined: return;
    case Value::Kind::None: out += "None"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "True" : "False"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: out += float_repr(v.as_float()); return;
    case Value::Kind::String: out += py::repr(v.as_string()); return;
    case Value::Kind::List:
    case Value::Kind::Tuple: {
      bool tuple = v.is_tuple();
      out += tuple ? "(" : "[";
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        write_repr(out, items[i], depth + 1);
      }
      if (tuple && items.size() == 1) out += ",";
      out += tuple ? ")" : "]";
      return;
    }
    case Value::Kind::Dict:
    case Value::Kind::Namespace: {
      out += v.is_namespace() ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, val] : v.dict().entries) {
        if (!first) out += ", ";
        first = false;
        write_repr(out, k, depth + 1);
        out += ": ";
        write_repr(out, val, depth + 1);
      }
      out += v.is_namespace() ? "}>" : "}";
      return;
    }
    case Value::Kind::Callable: out += "<function " + v.callable().name + ">"; return;
  }
}

}  // namespace

std::string to_str(const Value& v) {
  std::string out;
  write_str(out, v, 0);
  return out;
}

std::string repr(const Value& v) {
  std::string out;
  write_repr(out, v, 0);
  return out;
}

}  // namespace vtllm::jinja
