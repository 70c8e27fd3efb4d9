// Jinja2 3.1's builtin filters (jinja2/filters.py) as chat templates use them, plus
// transformers' tojson. Each follows the Python signature: the value, then
// positional or keyword arguments in the documented order.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "text/jinja/builtins.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/json.h"
#include "text/jinja/pystr.h"

namespace vtllm::jinja {

[[noreturn]] void runtime_error(const std::string& message) {
  throw TemplateError(TemplateError::Kind::Runtime, message);
}

const Value* arg(const CallArgs& args, size_t pos, std::string_view name) {
  if (pos < args.positional.size()) return &args.positional[pos];
  for (const auto& [k, v] : args.keyword)
    if (k == name) return &v;
  return nullptr;
}

void check_args(const CallArgs& args, std::string_view what, size_t max_positional,
                std::initializer_list<std::string_view> keywords) {
  if (args.positional.size() > max_positional)
    runtime_error(str_cat(what, "() takes at most ", max_positional, " positional argument(s), got ",
                          args.positional.size()));
  for (const auto& [k, v] : args.keyword)
    if (std::find(keywords.begin(), keywords.end(), k) == keywords.end())
      runtime_error(str_cat(what, "() got an unexpected keyword argument '", k, "'"));
}

namespace {

using Filter = Value (*)(Interpreter&, const Value&, CallArgs&);

bool flag(const CallArgs& a, size_t pos, std::string_view name, bool dflt) {
  const Value* v = arg(a, pos, name);
  return v ? v->truthy() : dflt;
}

int64_t int_arg(const CallArgs& a, size_t pos, std::string_view name, int64_t dflt) {
  const Value* v = arg(a, pos, name);
  if (!v) return dflt;
  if (v->is_int()) return v->as_int();
  if (v->is_bool()) return v->as_bool();
  runtime_error(str_cat("argument '", name, "' must be an integer, not '", v->type_name(), "'"));
}

std::optional<std::string> str_arg(const CallArgs& a, size_t pos, std::string_view name) {
  const Value* v = arg(a, pos, name);
  if (!v || v->is_none()) return std::nullopt;
  return to_str(*v);
}

// Jinja2's make_attrgetter: "a.b.0" looked up part by part with getitem.
Value get_path(Interpreter& in, const Value& v, const std::string& path) {
  Value cur = v;
  for (const std::string& part : py::split(path, std::string("."), -1)) {
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = in.getitem(cur, digits ? Value(static_cast<int64_t>(std::strtoll(part.c_str(), nullptr, 10)))
                                 : Value(part));
  }
  return cur;
}

// Sort key for dictsort/sort/unique/min/max: strings folded unless case_sensitive.
Value fold(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(py::lower(v.as_string())) : v;
}

Value f_length(Interpreter&, const Value& v, CallArgs&) {
  switch (v.kind()) {
    case Value::Kind::String: return Value(static_cast<int64_t>(py::length(v.as_string())));
    case Value::Kind::List:
    case Value::Kind::Tuple: return Value(static_cast<int64_t>(v.items().size()));
    case Value::Kind::Dict: return Value(static_cast<int64_t>(v.dict().entries.size()));
    case Value::Kind::Undefined: return Value(0);
    default: runtime_error(str_cat("object of type '", v.type_name(), "' has no len()"));
  }
}

Value f_trim(Interpreter&, const Value& v, CallArgs& a) {
  check_args(a, "trim", 1, {"chars"});
  return Value(py::strip(to_str(v), str_arg(a, 0, "chars"), true, true));
}

Value f_tojson(Interpreter& in, const Value& v, CallArgs& a) {
  check_args(a, "tojson", 4, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions o;
  o.ensure_ascii = flag(a, 0, "ensure_ascii", false);
  const Value* indent = arg(a, 1, "indent");
  if (indent && !indent->is_none()) {
    o.has_indent = true;
    if (indent->is_string()) {
      o.indent = indent->as_string();
    } else {
      int64_t n = int_arg(a, 1, "indent", 0);
      o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(n, 1 << 16))), ' ');
    }
    o.item_separator = ",";
  }
  const Value* seps = arg(a, 2, "separators");
  if (seps && !seps->is_none()) {
    if (!seps->is_sequence() || seps->items().size() != 2 || !seps->items()[0].is_string() ||
        !seps->items()[1].is_string())
      runtime_error("tojson: separators must be a pair of strings");
    o.item_separator = seps->items()[0].as_string();
    o.key_separator = seps->items()[1].as_string();
  }
  o.sort_keys = flag(a, 3, "sort_keys", false);
  std::string out = json_dumps(v, o);
  in.check_size(out.size());
  return Value(std::move(out));
}

Value f_join(Interpreter& in, const Value& v, CallArgs& a) {
  check_args(a, "join", 2, {"d", "attribute"});
  std::string sep = str_arg(a, 0, "d").value_or("");
  auto attribute = str_arg(a, 1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : in.iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(attribute ? get_path(in, item, *attribute) : item);
    in.check_size(out.size());
  }
  return Value(std::move(out));
}

Value f_upper(Interpreter&, const Value& v, CallArgs&) { return Value(py::upper(to_str(v))); }
Value f_lower(Interpreter&, const Value& v, CallArgs&) { return Value(py::lower(to_str(v))); }
Value f_capitalize(Interpreter&, const Value& v, CallArgs&) { return Value(py::capitalize(to_str(v))); }

Value f_title(Interpreter&, const Value& v, CallArgs&) {
  // Jinja2's do_title: words begin after runs of [-\s({[<]; first letter upper, rest lower.
  std::vector<char32_t> cps = py::decode(to_str(v));
  std::string out;
  bool at_start = true;
  for (char32_t c : cps) {
    bool boundary = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::is_space(c);
    if (boundary) {
      py::append_utf8(out, c);
      at_start = true;
    } else {
      py::append_utf8(out, at_start ? py::to_upper(c) : py::to_lower(c));
      at_start = false;
    }
  }
  return Value(std::move(out));
}

Value f_replace(Interpreter& in, const Value& v, CallArgs& a) {
  check_args(a, "replace", 3, {"old", "new", "count"});
  auto old = str_arg(a, 0, "old");
  auto with = str_arg(a, 1, "new");
  if (!old || !with) runtime_error("replace() needs 'old' and 'new'");
  const Value* count = arg(a, 2, "count");
  int64_t n = count && !count->is_none() ? int_arg(a, 2, "count", -1) : -1;
  std::string s = to_str(v);
  if (!old->empty() && old->size() < with->size()) {
    size_t hits = 0;
    for (size_t p = s.find(*old); p != std::string::npos; p = s.find(*old, p + old->size())) ++hits;
    in.check_size(s.size() + hits * (with->size() - old->size()));
  } else if (old->empty()) {
    in.check_size(s.size() + (py::length(s) + 1) * with->size());
  }
  return Value(py::replace(s, *old, *with, n));
}

Value f_default(Interpreter&, const Value& v, CallArgs& a) {
  check_args(a, "default", 2, {"default_value", "boolean"});
  const Value* d = arg(a, 0, "default_value");
  bool boolean = flag(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value("");
  return v;
}

Value f_first(Interpreter& in, const Value& v, CallArgs&) {
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter& in, const Value& v, CallArgs&) {
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_list(Interpreter& in, const Value& v, CallArgs&) { return Value::list(in.iterate(v)); }

Value f_items(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict()) runtime_error("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict().entries) out.push_back(Value::tuple({k, val}));
  return Value::list(std::move(out));
}

Value f_map(Interpreter& in, const Value& v, CallArgs& a) {
  std::vector<Value> out;
  const Value* attribute = nullptr;
  for (const auto& [k, val] : a.keyword)
    if (k == "attribute") attribute = &val;
  if (attribute) {
    const Value* dflt = nullptr;
    for (const auto& [k, val] : a.keyword)
      if (k == "default") dflt = &val;
    for (const Value& item : in.iterate(v)) {
      Value r = get_path(in, item, to_str(*attribute));
      out.push_back(r.is_undefined() && dflt ? *dflt : r);
    }
    return Value::list(std::move(out));
  }
  if (a.positional.empty()) runtime_error("map requires a filter argument");
  std::string name = to_str(a.positional[0]);
  if (!has_filter(name)) runtime_error(str_cat("No filter named '", name, "'."));
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : in.iterate(v)) {
    CallArgs each = rest;
    out.push_back(apply_filter(in, name, item, each));
  }
  return Value::list(std::move(out));
}

// select / reject / selectattr / rejectattr share Jinja2's select_or_reject.
Value select_or_reject(Interpreter& in, const Value& v, CallArgs& a, bool lookup_attr, bool keep) {
  size_t off = 0;
  std::string attr;
  if (lookup_attr) {
    if (a.positional.empty()) runtime_error("Missing parameter for attribute name");
    attr = to_str(a.positional[0]);
    off = 1;
  }
  std::string test;
  bool has_test_name = a.positional.size() > off;
  if (has_test_name) {
    test = to_str(a.positional[off]);
    if (!has_test(test)) runtime_error(str_cat("No test named '", test, "'."));
  }
  CallArgs rest;
  if (has_test_name) rest.positional.assign(a.positional.begin() + static_cast<long>(off) + 1, a.positional.end());
  rest.keyword = a.keyword;
  std::vector<Value> out;
  for (const Value& item : in.iterate(v)) {
    Value subject = lookup_attr ? get_path(in, item, attr) : item;
    CallArgs each = rest;
    bool ok = has_test_name ? apply_test(in, test, subject, each) : subject.truthy();
    if (ok == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, true); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, false); }

Value f_unique(Interpreter& in, const Value& v, CallArgs& a) {
  check_args(a, "unique", 2, {"case_sensitive", "attribute"});
  bool cs = flag(a, 0, "case_sensitive", false);
  auto attribute = str_arg(a, 1, "attribute");
  std::vector<Value> seen, out;
  for (const Value& item : in.iterate(v)) {
    Value key = fold(attribute ? get_path(in, item, *attribute) : item, cs);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_string(Interpreter&, const Value& v, CallArgs&) { return Value(to_str(v)); }

// Python's int(str, base): optional sign, underscores between digits, surrounding whitespace.
std::optional<int64_t> parse_int(const std::string& text, int base) {
  std::string s = py::strip(text, std::nullopt, true, true);
  std::string digits;
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (base == 16 && i + 1 < s.size() && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) i += 2;
  else if (base == 8 && i + 1 < s.size() && s[i] == '0' && (s[i + 1] == 'o' || s[i + 1] == 'O')) i += 2;
  else if (base == 2 && i + 1 < s.size() && s[i] == '0' && (s[i + 1] == 'b' || s[i + 1] == 'B')) i += 2;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && !digits.empty() && i + 1 < s.size() && s[i + 1] != '_') continue;
    digits.push_back(s[i]);
  }
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'z') ? c - 'a' + 10 : (c >= 'A' && c <= 'Z') ? c - 'A' + 10 : 99;
    if (d >= base) return std::nullopt;
  }
  errno = 0;
  long long v = std::strtoll(digits.c_str(), nullptr, base);
  if (errno == ERANGE) return std::nullopt;
  return neg ? -v : v;
}

// Python's float(str): decimal or inf/nan spellings, surrounding whitespace allowed.
std::optional<double> parse_float(const std::string& text) {
  std::string s = py::strip(text, std::nullopt, true, true);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 1])))
      continue;
    clean.push_back(s[i]);
  }
  if (clean.empty() || clean.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  std::string low = py::lower(clean);
  std::string body = (low[0] == '+' || low[0] == '-') ? low.substr(1) : low;
  if (body == "inf" || body == "infinity") return low[0] == '-' ? -INFINITY : INFINITY;
  if (body == "nan") return NAN;
  if (body.find_first_not_of("0123456789.eE+-") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return d;
}

Value f_int(Interpreter&, const Value& v, CallArgs& a) {
  check_args(a, "int", 2, {"default", "base"});
  const Value* dflt = arg(a, 0, "default");
  int64_t base = int_arg(a, 1, "base", 10);
  Value fallback = dflt ? *dflt : Value(0);
  if (v.is_undefined()) runtime_error(v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
  if (v.is_int()) return v;
  if (v.is_bool()) return Value(int64_t{v.as_bool()});
  if (v.is_float()) {
    if (!std::isfinite(v.as_float())) return fallback;
    return Value(static_cast<int64_t>(std::trunc(v.as_float())));
  }
  if (v.is_string()) {
    if (base >= 2 && base <= 36)
      if (auto i = parse_int(v.as_string(), static_cast<int>(base))) return Value(*i);
    if (auto f = parse_float(v.as_string()))
      if (std::isfinite(*f)) return Value(static_cast<int64_t>(std::trunc(*f)));
  }
  return fallback;
}

Value f_float(Interpreter&, const Value& v, CallArgs& a) {
  check_args(a, "float", 1, {"default"});
  const Value* dflt = arg(a, 0, "default");
  Value fallback = dflt ? *dflt : Value(0.0);
  if (v.is_undefined()) runtime_error(v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
  if (v.is_number()) return Value(v.to_double());
  if (v.is_string())
    if (auto f = parse_float(v.as_string())) return Value(*f);
  return fallback;
}

Value f_round(Interpreter&, const Value& v, CallArgs& a) {
  check_args(a, "round", 2, {"precision", "method"});
  int64_t precision = int_arg(a, 0, "precision", 0);
  std::string method = str_arg(a, 1, "method").value_or("common");
  if (method != "common" && method != "ceil" && method != "floor")
    runtime_error("method must be common, ceil or floor");
  if (!v.is_number()) runtime_error(str_cat("type ", v.type_name(), " doesn't define __round__ method"));
  if (method == "common") {
    if (v.is_int() || v.is_bool()) {
      if (precision >= 0) return Value(v.is_bool() ? int64_t{v.as_bool()} : v.as_int());
      double m = std::pow(10.0, static_cast<double>(-precision));
      return Value(static_cast<int64_t>(std::nearbyint(static_cast<double>(v.as_int()) / m) * m));
    }
    double x = v.as_float();
    if (!std::isfinite(x) || precision > 300) return Value(x);
    if (precision >= 0) {
      // Correctly rounded, half to even on the exact binary value, as CPython's round().
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), x);
      return Value(std::strtod(buf, nullptr));
    }
    double m = std::pow(10.0, static_cast<double>(-precision));
    return Value(std::nearbyint(x / m) * m);
  }
  double m = std::pow(10.0, static_cast<double>(precision));
  double x = v.to_double();
  return Value((method == "ceil" ? std::ceil(x * m) : std::floor(x * m)) / m);
}

Value f_safe(Interpreter&, const Value& v, CallArgs&) { return Value(to_str(v)); }

Value f_indent(Interpreter& in, const Value& v, CallArgs& a) {
  check_args(a, "indent", 3, {"width", "first", "blank"});
  const Value* w = arg(a, 0, "width");
  std::string indention = w && w->is_string() ? w->as_string()
                                              : std::string(static_cast<size_t>(std::clamp<int64_t>(
                                                                int_arg(a, 0, "width", 4), 0, 1 << 16)),
                                                            ' ');
  bool first = flag(a, 1, "first", false);
  bool blank = flag(a, 2, "blank", false);
  std::string s = to_str(v) + "\n";
  std::vector<std::string> lines = py::splitlines(s);
  in.check_size(s.size() + lines.size() * indention.size());
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : indention) + lines[i];
  }
  if (first) rv = indention + rv;
  return Value(std::move(rv));
}

Value f_dictsort(Interpreter& in, const Value& v, CallArgs& a) {
  check_args(a, "dictsort", 3, {"case_sensitive", "by", "reverse"});
  bool cs = flag(a, 0, "case_sensitive", false);
  std::string by = str_arg(a, 1, "by").value_or("key");
  bool reverse = flag(a, 2, "reverse", false);
  if (by != "key" && by != "value") runtime_error("You can only sort by either \"key\" or \"value\"");
  if (!v.is_dict()) runtime_error(str_cat("dictsort needs a mapping, not '", v.type_name(), "'"));
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.dict().entries) pairs.push_back(Value::tuple({k, val}));
  size_t idx = by == "key" ? 0 : 1;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    Value kx = fold(x.items()[idx], cs), ky = fold(y.items()[idx], cs);
    return reverse ? in.less(ky, kx) : in.less(kx, ky);
  });
  return Value::list(std::move(pairs));
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& a) {
  check_args(a, "sort", 3, {"reverse", "case_sensitive", "attribute"});
  bool reverse = flag(a, 0, "reverse", false);
  bool cs = flag(a, 1, "case_sensitive", false);
  auto attribute = str_arg(a, 2, "attribute");
  std::vector<Value> items = in.iterate(v);
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : items) keyed.emplace_back(fold(attribute ? get_path(in, item, *attribute) : item, cs), item);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? in.less(y.first, x.first) : in.less(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(item);
  return Value::list(std::move(out));
}

Value f_reverse(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_string()) {
    std::vector<char32_t> cps = py::decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value(py::encode(cps));
  }
  std::vector<Value> items = in.iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_abs(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_int()) {
    if (v.as_int() == INT64_MIN) runtime_error("integer overflow");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_bool()) return Value(int64_t{v.as_bool()});
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  runtime_error(str_cat("bad operand type for abs(): '", v.type_name(), "'"));
}

Value f_sum(Interpreter& in, const Value& v, CallArgs& a) {
  check_args(a, "sum", 2, {"attribute", "start"});
  auto attribute = str_arg(a, 0, "attribute");
  const Value* start = arg(a, 1, "start");
  Value total = start ? *start : Value(0);
  for (const Value& item : in.iterate(v)) total = in.binary("+", total, attribute ? get_path(in, item, *attribute) : item);
  return total;
}

Value min_max(Interpreter& in, const Value& v, CallArgs& a, bool want_max) {
  check_args(a, want_max ? "max" : "min", 2, {"case_sensitive", "attribute"});
  bool cs = flag(a, 0, "case_sensitive", false);
  auto attribute = str_arg(a, 1, "attribute");
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined(str_cat("No aggregated item, sequence was empty."));
  size_t best = 0;
  Value best_key = fold(attribute ? get_path(in, items[0], *attribute) : items[0], cs);
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = fold(attribute ? get_path(in, items[i], *attribute) : items[i], cs);
    if (want_max ? in.less(best_key, key) : in.less(key, best_key)) {
      best = i;
      best_key = key;
    }
  }
  return items[best];
}

Value f_min(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false); }
Value f_max(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true); }

Value f_escape(Interpreter&, const Value& v, CallArgs&) {
  std::string out;
  for (char c : to_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return Value(std::move(out));
}

Value f_attr(Interpreter& in, const Value& v, CallArgs& a) {
  check_args(a, "attr", 1, {"name"});
  auto name = str_arg(a, 0, "name");
  if (!name) runtime_error("attr() needs a name");
  // Attributes only, never items: d|attr('key') is undefined for a dict's key.
  if (v.is_namespace() || v.is_undefined()) return in.getattr(v, *name);
  Value m = get_method(v, *name);
  if (!m.is_undefined() || !m.undefined_hint().empty()) return m;
  return Value::undefined(str_cat("'", v.type_name(), " object' has no attribute '", *name, "'"));
}

Value f_center(Interpreter& in, const Value& v, CallArgs& a) {
  check_args(a, "center", 1, {"width"});
  int64_t width = int_arg(a, 0, "width", 80);
  std::string s = to_str(v);
  int64_t n = static_cast<int64_t>(py::length(s));
  if (width <= n) return Value(s);
  in.check_size(static_cast<size_t>(width));
  // CPython's str.center: the odd space goes left when the padding and width are both odd.
  int64_t pad = width - n;
  int64_t left = pad / 2 + (pad & width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(pad - left), ' '));
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs&) {
  // Jinja2 counts \w+ runs; letters, digits and '_' (ASCII and beyond) form words.
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : py::decode(to_str(v))) {
    bool w = c == '_' || (c >= '0' && c <= '9') || py::is_cased_upper(c) || py::is_cased_lower(c) ||
             (c >= 0x80 && !py::is_space(c) && c > 0x2FF);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

const std::map<std::string, Filter, std::less<>>& filters() {
  static const std::map<std::string, Filter, std::less<>> table = {
      {"abs", f_abs},         {"attr", f_attr},           {"capitalize", f_capitalize},
      {"center", f_center},   {"count", f_length},        {"d", f_default},
      {"default", f_default}, {"dictsort", f_dictsort},   {"e", f_escape},
      {"escape", f_escape},   {"first", f_first},         {"float", f_float},
      {"indent", f_indent},   {"int", f_int},             {"items", f_items},
      {"join", f_join},       {"last", f_last},           {"length", f_length},
      {"list", f_list},       {"lower", f_lower},         {"map", f_map},
      {"max", f_max},         {"min", f_min},             {"reject", f_reject},
      {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse},
      {"round", f_round},     {"safe", f_safe},           {"select", f_select},
      {"selectattr", f_selectattr}, {"sort", f_sort},     {"string", f_string},
      {"sum", f_sum},         {"title", f_title},         {"tojson", f_tojson},
      {"trim", f_trim},       {"unique", f_unique},       {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return table;
}

}  // namespace

bool has_filter(std::string_view name) { return filters().count(name) > 0; }

Value apply_filter(Interpreter& in, std::string_view name, const Value& value, CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) runtime_error(str_cat("No filter named '", name, "'."));
  return it->second(in, value, args);
}

}  // namespace vtllm::jinja
