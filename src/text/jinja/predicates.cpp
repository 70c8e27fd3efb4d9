// Jinja2 3.1's builtin tests (jinja2/tests.py): `value is name(args)`.
#include <map>

#include "text/jinja/builtins.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/pystr.h"

namespace vtllm::jinja {

namespace {

using Test = bool (*)(Interpreter&, const Value&, CallArgs&);

const Value& other(const CallArgs& a, std::string_view test) {
  const Value* v = arg(a, 0, "other");
  if (!v) runtime_error(str_cat("test '", test, "' needs an argument"));
  return *v;
}

int64_t as_integer(const Value& v, std::string_view test) {
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool();
  runtime_error(str_cat("test '", test, "' needs an integer, not '", v.type_name(), "'"));
}

bool t_defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool t_none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool t_string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool t_number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool t_integer(Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }
bool t_float(Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }
bool t_mapping(Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }
bool t_boolean(Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }
bool t_true(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_false(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
// Undefined defines __call__ (to raise), so Python's callable() says yes.
bool t_callable(Interpreter&, const Value& v, CallArgs&) { return v.is_callable() || v.is_undefined(); }
bool t_escaped(Interpreter&, const Value&, CallArgs&) { return false; }

// iter(value) succeeds: strings, lists, tuples, dicts, and Undefined (which iterates empty).
bool t_iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined();
}

// len(value) and value.__getitem__ exist.
bool t_sequence(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined();
}

bool t_in(Interpreter& in, const Value& v, CallArgs& a) {
  const Value* seq = arg(a, 0, "seq");
  if (!seq) runtime_error("test 'in' needs a sequence");
  return in.contains(*seq, v);
}

bool t_eq(Interpreter&, const Value& v, CallArgs& a) { return v == other(a, "eq"); }
bool t_ne(Interpreter&, const Value& v, CallArgs& a) { return !(v == other(a, "ne")); }
bool t_lt(Interpreter& in, const Value& v, CallArgs& a) { return in.less(v, other(a, "lt")); }
bool t_gt(Interpreter& in, const Value& v, CallArgs& a) { return in.less(other(a, "gt"), v); }
bool t_le(Interpreter& in, const Value& v, CallArgs& a) { return !in.less(other(a, "le"), v); }
bool t_ge(Interpreter& in, const Value& v, CallArgs& a) { return !in.less(v, other(a, "ge")); }

bool t_odd(Interpreter&, const Value& v, CallArgs&) { return as_integer(v, "odd") % 2 != 0; }
bool t_even(Interpreter&, const Value& v, CallArgs&) { return as_integer(v, "even") % 2 == 0; }

bool t_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
  const Value* n = arg(a, 0, "num");
  if (!n) runtime_error("test 'divisibleby' needs a number");
  int64_t d = as_integer(*n, "divisibleby");
  if (d == 0) runtime_error("integer division or modulo by zero");
  if (d == -1) return true;
  return as_integer(v, "divisibleby") % d == 0;
}

bool t_lower(Interpreter&, const Value& v, CallArgs&) {
  // str.islower(): at least one cased character and no uppercase ones.
  bool cased = false;
  for (char32_t c : py::decode(to_str(v))) {
    if (py::is_cased_upper(c) && !py::is_cased_lower(c)) return false;
    if (py::is_cased_lower(c)) cased = true;
  }
  return cased;
}

bool t_upper(Interpreter&, const Value& v, CallArgs&) {
  bool cased = false;
  for (char32_t c : py::decode(to_str(v))) {
    if (py::is_cased_lower(c) && !py::is_cased_upper(c)) return false;
    if (py::is_cased_upper(c)) cased = true;
  }
  return cased;
}

// `is` identity: None/True/False are singletons; containers compare by object.
bool t_sameas(Interpreter&, const Value& v, CallArgs& a) {
  const Value& o = other(a, "sameas");
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::None:
    case Value::Kind::Undefined: return true;
    case Value::Kind::Bool: return v.as_bool() == o.as_bool();
    case Value::Kind::Int: return v.as_int() == o.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    case Value::Kind::List:
    case Value::Kind::Tuple: return &v.items() == &o.items();
    case Value::Kind::Dict:
    case Value::Kind::Namespace: return &v.dict() == &o.dict();
    case Value::Kind::Callable: return &v.callable() == &o.callable();
    default: return false;
  }
}

bool t_filter(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && has_filter(v.as_string()); }
bool t_test(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && has_test(v.as_string()); }

const std::map<std::string, Test, std::less<>>& tests() {
  static const std::map<std::string, Test, std::less<>> table = {
      {"boolean", t_boolean},   {"callable", t_callable}, {"defined", t_defined},
      {"divisibleby", t_divisibleby}, {"eq", t_eq},       {"equalto", t_eq},
      {"escaped", t_escaped},   {"even", t_even},         {"false", t_false},
      {"filter", t_filter},     {"float", t_float},       {"ge", t_ge},
      {"greaterthan", t_gt},    {"gt", t_gt},             {"in", t_in},
      {"integer", t_integer},   {"iterable", t_iterable}, {"le", t_le},
      {"lessthan", t_lt},       {"lower", t_lower},       {"lt", t_lt},
      {"mapping", t_mapping},   {"ne", t_ne},             {"none", t_none},
      {"number", t_number},     {"odd", t_odd},           {"sameas", t_sameas},
      {"sequence", t_sequence}, {"string", t_string},     {"test", t_test},
      {"true", t_true},         {"undefined", t_undefined}, {"upper", t_upper},
  };
  return table;
}

}  // namespace

bool has_test(std::string_view name) { return tests().count(name) > 0; }

bool apply_test(Interpreter& in, std::string_view name, const Value& value, CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) runtime_error(str_cat("No test named '", name, "'."));
  return it->second(in, value, args);
}

}  // namespace vtllm::jinja
