// Python methods of str, dict and list that templates call (`s.startswith(x)`,
// `d.items()`), bound to their object. The mutating ones are refused as
// ImmutableSandboxedEnvironment refuses them.
#include <algorithm>

#include "text/jinja/builtins.h"
#include "text/jinja/pystr.h"

namespace vtllm::jinja {

namespace {

std::optional<std::string> opt_str(const CallArgs& a, size_t pos, std::string_view name, std::string_view method) {
  const Value* v = arg(a, pos, name);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) runtime_error(str_cat(method, "() argument must be str or None, not ", v->type_name()));
  return v->as_string();
}

const std::string& need_str(const CallArgs& a, size_t pos, std::string_view name, std::string_view method) {
  const Value* v = arg(a, pos, name);
  if (!v) runtime_error(str_cat(method, "() missing required argument '", name, "'"));
  if (!v->is_string()) runtime_error(str_cat(method, "() argument must be str, not ", v->type_name()));
  return v->as_string();
}

int64_t opt_int(const CallArgs& a, size_t pos, std::string_view name, int64_t dflt) {
  const Value* v = arg(a, pos, name);
  if (!v) return dflt;
  if (v->is_int()) return v->as_int();
  if (v->is_bool()) return v->as_bool();
  runtime_error(str_cat("'", v->type_name(), "' object cannot be interpreted as an integer"));
}

Value str_list(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.emplace_back(p);
  return Value::list(std::move(out));
}

int64_t cp_index(const std::string& s, size_t byte_pos) {
  return static_cast<int64_t>(py::length(std::string_view(s).substr(0, byte_pos)));
}

// startswith/endswith take a str or a tuple of them.
bool affix(const std::string& s, const Value& what, bool prefix, std::string_view method) {
  auto test = [&](const Value& w) {
    if (!w.is_string())
      runtime_error(str_cat(method, " first arg must be str or a tuple of str, not ", w.type_name()));
    const std::string& x = w.as_string();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (what.is_tuple()) return std::any_of(what.items().begin(), what.items().end(), test);
  return test(what);
}

template <class Pred>
bool all_chars(const std::string& s, Pred p) {
  std::vector<char32_t> cps = py::decode(s);
  return !cps.empty() && std::all_of(cps.begin(), cps.end(), p);
}

bool is_digit(char32_t c) { return (c >= '0' && c <= '9') || (c >= 0x660 && c <= 0x669) || (c >= 0xFF10 && c <= 0xFF19); }
bool is_alpha(char32_t c) { return py::is_cased_upper(c) || py::is_cased_lower(c) || (c >= 0x3040 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3); }

Value string_method(const std::string& s, const std::string& name, CallArgs& a) {
  if (name == "startswith" || name == "endswith") {
    const Value* w = arg(a, 0, "prefix");
    if (!w) runtime_error(str_cat(name, "() takes at least 1 argument (0 given)"));
    return Value(affix(s, *w, name == "startswith", name));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return Value(py::strip(s, opt_str(a, 0, "chars", name), name != "rstrip", name != "lstrip"));
  if (name == "split" || name == "rsplit") {
    auto sep = opt_str(a, 0, "sep", name);
    if (sep && sep->empty()) runtime_error("empty separator");
    int64_t max = opt_int(a, 1, "maxsplit", -1);
    return str_list(name == "split" ? py::split(s, sep, max) : py::rsplit(s, sep, max));
  }
  if (name == "splitlines") return str_list(py::splitlines(s, arg(a, 0, "keepends") && arg(a, 0, "keepends")->truthy()));
  if (name == "replace") {
    const std::string& old = need_str(a, 0, "old", name);
    const std::string& with = need_str(a, 1, "new", name);
    int64_t count = opt_int(a, 2, "count", -1);
    if (old.size() < with.size() || old.empty()) {
      size_t hits = old.empty() ? py::length(s) + 1 : 0;
      for (size_t p = old.empty() ? std::string::npos : s.find(old); p != std::string::npos; p = s.find(old, p + old.size())) ++hits;
      if (s.size() + hits * with.size() > (64u << 20)) runtime_error("replace() result too large");
    }
    return Value(py::replace(s, old, with, count));
  }
  if (name == "upper") return Value(py::upper(s));
  if (name == "lower" || name == "casefold") return Value(py::lower(s));
  if (name == "title") return Value(py::title(s));
  if (name == "capitalize") return Value(py::capitalize(s));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const std::string& sub = need_str(a, 0, "sub", name);
    size_t p = (name == "find" || name == "index") ? s.find(sub) : s.rfind(sub);
    if (p == std::string::npos) {
      if (name == "index" || name == "rindex") runtime_error("substring not found");
      return Value(-1);
    }
    return Value(cp_index(s, p));
  }
  if (name == "count") {
    const std::string& sub = need_str(a, 0, "sub", name);
    if (sub.empty()) return Value(static_cast<int64_t>(py::length(s) + 1));
    int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return Value(n);
  }
  if (name == "join") {
    const Value* it = arg(a, 0, "iterable");
    if (!it) runtime_error("join() takes exactly one argument (0 given)");
    std::vector<Value> items;
    if (it->is_sequence()) items = it->items();
    else if (it->is_dict()) for (const auto& [k, v] : it->dict().entries) items.push_back(k);
    else if (it->is_string()) for (char32_t c : py::decode(it->as_string())) { std::string ch; py::append_utf8(ch, c); items.emplace_back(ch); }
    else runtime_error("can only join an iterable");
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        runtime_error(str_cat("sequence item ", i, ": expected str instance, ", items[i].type_name(), " found"));
      if (i) out += s;
      out += items[i].as_string();
      if (out.size() > (64u << 20)) runtime_error("join() result too large");
    }
    return Value(std::move(out));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string& x = need_str(a, 0, name == "removeprefix" ? "prefix" : "suffix", name);
    if (name == "removeprefix") return Value(s.compare(0, x.size(), x) == 0 ? s.substr(x.size()) : s);
    bool ends = x.size() <= s.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
    return Value(ends && !x.empty() ? s.substr(0, s.size() - x.size()) : s);
  }
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return Value(all_chars(s, is_digit));
  if (name == "isalpha") return Value(all_chars(s, is_alpha));
  if (name == "isalnum") return Value(all_chars(s, [](char32_t c) { return is_alpha(c) || is_digit(c); }));
  if (name == "isspace") return Value(all_chars(s, py::is_space));
  if (name == "islower" || name == "isupper") {
    bool cased = false;
    for (char32_t c : py::decode(s)) {
      bool up = py::is_cased_upper(c) && !py::is_cased_lower(c), low = py::is_cased_lower(c) && !py::is_cased_upper(c);
      if (name == "islower" ? up : low) return Value(false);
      cased |= name == "islower" ? low : up;
    }
    return Value(cased);
  }
  runtime_error(str_cat("str has no method '", name, "'"));
}

const char* const kStrMethods[] = {"startswith", "endswith", "strip", "lstrip", "rstrip", "split", "rsplit",
                                   "splitlines", "replace", "upper", "lower", "casefold", "title", "capitalize",
                                   "find", "rfind", "index", "rindex", "count", "join", "removeprefix",
                                   "removesuffix", "isdigit", "isnumeric", "isdecimal", "isalpha", "isalnum",
                                   "isspace", "islower", "isupper"};

bool known(const char* const* b, const char* const* e, const std::string& name) {
  return std::any_of(b, e, [&](const char* m) { return name == m; });
}

Value unsafe(const std::string& name, const char* type) {
  return Value::undefined(str_cat("access to attribute '", name, "' of '", type, "' object is unsafe."));
}

}  // namespace

Value get_method(const Value& self, const std::string& name) {
  if (self.is_string()) {
    if (!known(std::begin(kStrMethods), std::end(kStrMethods), name)) return Value();
    std::string s = self.as_string();
    return Value::callable(name, [s, name](CallArgs& a) { return string_method(s, name, a); });
  }
  if (self.is_dict()) {
    static const char* const kUnsafe[] = {"clear", "pop", "popitem", "setdefault", "update"};
    if (known(std::begin(kUnsafe), std::end(kUnsafe), name)) return unsafe(name, "dict");
    Value d = self;
    if (name == "get")
      return Value::callable(name, [d](CallArgs& a) {
        const Value* key = arg(a, 0, "key");
        if (!key) runtime_error("get expected at least 1 argument, got 0");
        if (const Value* v = d.dict().find(*key)) return *v;
        const Value* dflt = arg(a, 1, "default");
        return dflt ? *dflt : Value::none();
      });
    if (name == "items" || name == "keys" || name == "values")
      return Value::callable(name, [d, name](CallArgs&) {
        std::vector<Value> out;
        for (const auto& [k, v] : d.dict().entries)
          out.push_back(name == "items" ? Value::tuple({k, v}) : name == "keys" ? k : v);
        return Value::list(std::move(out));
      });
    if (name == "copy") return Value::callable(name, [d](CallArgs&) { return Value::mapping(d.dict()); });
    return Value();
  }
  if (self.is_sequence()) {
    static const char* const kUnsafe[] = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
    if (self.is_list() && known(std::begin(kUnsafe), std::end(kUnsafe), name)) return unsafe(name, "list");
    Value l = self;
    if (name == "index" || name == "count")
      return Value::callable(name, [l, name](CallArgs& a) {
        const Value* x = arg(a, 0, "value");
        if (!x) runtime_error(str_cat(name, "() takes exactly one argument (0 given)"));
        int64_t n = 0;
        for (size_t i = 0; i < l.items().size(); ++i) {
          if (!(l.items()[i] == *x)) continue;
          if (name == "index") return Value(static_cast<int64_t>(i));
          ++n;
        }
        if (name == "index") runtime_error(str_cat(repr(*x), " is not in list"));
        return Value(n);
      });
    if (name == "copy" && self.is_list()) return Value::callable(name, [l](CallArgs&) { return Value::list(l.items()); });
    return Value();
  }
  return Value();
}

}  // namespace vtllm::jinja
