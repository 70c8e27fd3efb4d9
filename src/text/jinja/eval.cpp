// Expression evaluation and Python's operator semantics for the interpreter.
#include <cmath>
#include <limits>

#include "text/jinja/builtins.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/pystr.h"

namespace vtllm::jinja {

namespace {
// Child `i` of `e`; the parser leaves a slot empty where source omits it (a slice's
// object inside a tuple subscript, x[1:, 2]): no value, a template error.
const Expr& arg(const Expr& e, size_t i) {
  if (i >= e.args.size() || !e.args[i]) runtime_error("an expression with an empty operand");
  return *e.args[i];
}
}  // namespace


namespace {

[[noreturn]] void undefined_error(const Value& v) {
  runtime_error(v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
}

std::string object_name(const Value& v) { return str_cat("'", v.type_name(), " object'"); }

int64_t int_of(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
bool intlike(const Value& v) { return v.is_int() || v.is_bool(); }

// get_method's answer names an attribute: a bound method, or the sandbox's refusal.
bool is_attribute(const Value& m) { return !m.is_undefined() || !m.undefined_hint().empty(); }

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  runtime_error(str_cat("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '",
                        b.type_name(), "'"));
}

int64_t checked(bool overflow, int64_t v) {
  if (overflow) runtime_error("integer overflow (Python integers are unbounded; vtllm's are 64-bit)");
  return v;
}

}  // namespace

Value Interpreter::getattr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::Undefined: undefined_error(obj);
    case Value::Kind::Namespace: {
      if (const Value* v = obj.dict().find_key(name)) return *v;
      return Value::undefined(str_cat("'Namespace' object has no attribute '", name, "'"));
    }
    case Value::Kind::Dict: {
      Value m = get_method(obj, name);
      if (is_attribute(m)) return m;
      if (const Value* v = obj.dict().find_key(name)) return *v;
      return Value::undefined(str_cat("'dict object' has no attribute '", name, "'"));
    }
    default: {
      Value m = get_method(obj, name);
      if (is_attribute(m)) return m;
      return Value::undefined(str_cat(object_name(obj), " has no attribute '", name, "'"));
    }
  }
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::Undefined: undefined_error(obj);
    case Value::Kind::Dict: {
      if (const Value* v = obj.dict().find(key)) return *v;
      break;
    }
    case Value::Kind::List:
    case Value::Kind::Tuple:
      if (intlike(key)) {
        const auto& items = obj.items();
        int64_t i = int_of(key), n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
        return Value::undefined(str_cat(object_name(obj), " has no element ", int_of(key)));
      }
      break;
    case Value::Kind::String:
      if (intlike(key)) {
        if (auto c = py::at(obj.as_string(), int_of(key))) return Value(*c);
        return Value::undefined(str_cat(object_name(obj), " has no element ", int_of(key)));
      }
      break;
    default: break;
  }
  if (key.is_string()) {
    if (obj.is_namespace()) return getattr(obj, key.as_string());
    Value m = get_method(obj, key.as_string());
    if (is_attribute(m)) return m;
    return Value::undefined(str_cat(object_name(obj), " has no attribute '", key.as_string(), "'"));
  }
  return Value::undefined(str_cat(object_name(obj), " has no element ", repr(key)));
}

Value Interpreter::call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) undefined_error(fn);
  if (!fn.is_callable()) runtime_error(str_cat("'", fn.type_name(), "' object is not callable"));
  return fn.callable().fn(args);
}

void Interpreter::check_size(size_t n) const {
  if (n > limits_.max_output_bytes)
    throw TemplateError(TemplateError::Kind::Limit,
                        str_cat("a value would grow past the ", limits_.max_output_bytes, "-byte output limit"));
}

Value Interpreter::binary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = to_str(a);
    std::string t = to_str(b);
    check_size(s.size() + t.size());
    return Value(s + t);
  }
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  bool nums = a.is_number() && b.is_number();
  bool ints = intlike(a) && intlike(b);
  if (op == "+") {
    if (ints) {
      int64_t r = 0;
      bool overflow = __builtin_add_overflow(int_of(a), int_of(b), &r);
      return Value(checked(overflow, r));
    }
    if (nums) return Value(a.to_double() + b.to_double());
    if (a.is_string() && b.is_string()) {
      check_size(a.as_string().size() + b.as_string().size());
      return Value(a.as_string() + b.as_string());
    }
    if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
      check_size((a.items().size() + b.items().size()) * sizeof(Value));
      std::vector<Value> items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return a.is_list() ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r = 0;
      bool overflow = __builtin_sub_overflow(int_of(a), int_of(b), &r);
      return Value(checked(overflow, r));
    }
    if (nums) return Value(a.to_double() - b.to_double());
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r = 0;
      bool overflow = __builtin_mul_overflow(int_of(a), int_of(b), &r);
      return Value(checked(overflow, r));
    }
    if (nums) return Value(a.to_double() * b.to_double());
    const Value* seq = intlike(b) ? &a : intlike(a) ? &b : nullptr;
    const Value* count = seq == &a ? &b : &a;
    if (seq && (seq->is_string() || seq->is_sequence())) {
      int64_t n = std::max<int64_t>(0, int_of(*count));
      size_t unit =
          seq->is_string() ? seq->as_string().size() : seq->items().size() * sizeof(Value);
      if (unit && static_cast<uint64_t>(n) > limits_.max_output_bytes / unit) check_size(SIZE_MAX);
      if (seq->is_string()) {
        std::string out;
        out.reserve(unit * static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) out += seq->as_string();
        return Value(std::move(out));
      }
      std::vector<Value> items;
      for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->items().begin(), seq->items().end());
      return seq->is_list() ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    unsupported(op, a, b);
  }
  if (!nums) {
    if (op == "%" && a.is_string()) runtime_error("printf-style '%' string formatting is not supported");
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (b.to_double() == 0) runtime_error("division by zero");
    return Value(a.to_double() / b.to_double());
  }
  if (op == "//" || op == "%") {
    if (b.to_double() == 0) runtime_error(ints ? "integer division or modulo by zero" : "float divmod()");
    if (ints) {
      int64_t x = int_of(a), y = int_of(b);
      if (x == std::numeric_limits<int64_t>::min() && y == -1) checked(true, 0);
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        q -= 1;
        r += y;
      }
      return Value(op == "//" ? q : r);
    }
    // CPython's float_floor_div / float_rem.
    double x = a.to_double(), y = b.to_double();
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0) {
      if ((y < 0) != (mod < 0)) {
        mod += y;
        div -= 1.0;
      }
    } else {
      mod = std::copysign(0.0, y);
    }
    if (op == "%") return Value(mod);
    if (div == 0) return Value(std::copysign(0.0, x / y));
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return Value(floordiv);
  }
  if (op == "**") {
    if (ints && int_of(b) >= 0) {
      int64_t base = int_of(a), e = int_of(b), r = 1;
      while (e > 0) {
        if (e & 1) checked(__builtin_mul_overflow(r, base, &r), 0);
        e >>= 1;
        if (e > 0) checked(__builtin_mul_overflow(base, base, &base), 0);
      }
      return Value(r);
    }
    double x = a.to_double(), y = b.to_double();
    if (x == 0 && y < 0) runtime_error("0.0 cannot be raised to a negative power");
    return Value(std::pow(x, y));
  }
  runtime_error(str_cat("unknown operator '", op, "'"));
}

bool Interpreter::less(const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  if (intlike(a) && intlike(b)) return int_of(a) < int_of(b);
  if (a.is_number() && b.is_number()) return a.to_double() < b.to_double();
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i] == y[i]) continue;
      return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  runtime_error(str_cat("'<' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'"));
}

bool Interpreter::contains(const Value& c, const Value& item) {
  switch (c.kind()) {
    case Value::Kind::String:
      if (!item.is_string())
        runtime_error(str_cat("'in <string>' requires string as left operand, not ", item.type_name()));
      return c.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
    case Value::Kind::Tuple:
      for (const Value& v : c.items())
        if (v == item) return true;
      return false;
    case Value::Kind::Dict: return c.dict().find(item) != nullptr;
    case Value::Kind::Undefined: return false;  // Undefined iterates as empty
    default: runtime_error(str_cat("argument of type '", c.type_name(), "' is not iterable"));
  }
}

std::vector<Value> Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::List:
    case Value::Kind::Tuple: return v.items();
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      for (const auto& [k, val] : v.dict().entries) keys.push_back(k);
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      for (char32_t c : py::decode(v.as_string())) {
        std::string s;
        py::append_utf8(s, c);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    case Value::Kind::Undefined: return {};
    default: runtime_error(str_cat("'", v.type_name(), "' object is not iterable"));
  }
}

Value Interpreter::eval_call_like(const Expr& e, const FramePtr& frame, CallArgs& args) {
  for (size_t i = 1; i < e.args.size(); ++i) args.positional.push_back(eval(arg(e, i), frame));
  for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v, frame));
  return Value();
}

Value Interpreter::eval(const Expr& e, const FramePtr& frame) {
  struct Guard {
    explicit Guard(int& d) : d_(d) {
      if (++d_ > 10000) throw TemplateError(TemplateError::Kind::Limit, "expression evaluation nests too deeply");
    }
    ~Guard() { --d_; }
    int& d_;
  } guard(eval_depth_);
  switch (e.kind) {
    case Expr::Kind::Literal: return e.value;
    case Expr::Kind::Name: return lookup(e.name, frame);
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      std::vector<Value> items;
      for (const auto& a : e.args) {
        // The parser leaves a slot empty where a subscript omits it (x[1:, 2]); such an
        // element is no value (a fuzz-found input dereferenced it).
        if (!a) runtime_error("an empty element in a list or tuple");
        items.push_back(eval(*a, frame));
      }
      return e.kind == Expr::Kind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case Expr::Kind::Dict: {
      DictData d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(arg(e, i), frame);
        if (k.is_list() || k.is_dict() || k.is_undefined())
          runtime_error(str_cat("unhashable type: '", k.type_name(), "'"));
        d.set(std::move(k), eval(arg(e, i + 1), frame));
      }
      return Value::mapping(std::move(d));
    }
    case Expr::Kind::GetAttr: return getattr(eval(arg(e, 0), frame), e.name);
    case Expr::Kind::GetItem:
      if (!e.args[0] || !e.args[1]) runtime_error("an empty subscript");
      return getitem(eval(arg(e, 0), frame), eval(arg(e, 1), frame));
    case Expr::Kind::Slice: {
      Value obj = eval(arg(e, 0), frame);
      std::optional<int64_t> bounds[3];
      for (int i = 0; i < 3; ++i) {
        if (!e.args[static_cast<size_t>(i) + 1]) continue;
        Value b = eval(arg(e, static_cast<size_t>(i) + 1), frame);
        if (b.is_none()) continue;
        if (!intlike(b)) runtime_error("slice indices must be integers or None");
        bounds[i] = int_of(b);
      }
      int64_t step = bounds[2].value_or(1);
      if (step == 0) runtime_error("slice step cannot be zero");
      if (obj.is_undefined()) undefined_error(obj);
      if (obj.is_string()) {
        std::vector<char32_t> cps = py::decode(obj.as_string());
        std::vector<char32_t> out;
        for (int64_t i : py::slice_indices(static_cast<int64_t>(cps.size()), bounds[0], bounds[1], step))
          out.push_back(cps[static_cast<size_t>(i)]);
        return Value(py::encode(out));
      }
      if (obj.is_sequence()) {
        std::vector<Value> out;
        const auto& items = obj.items();
        for (int64_t i : py::slice_indices(static_cast<int64_t>(items.size()), bounds[0], bounds[1], step))
          out.push_back(items[static_cast<size_t>(i)]);
        return obj.is_list() ? Value::list(std::move(out)) : Value::tuple(std::move(out));
      }
      return Value::undefined(str_cat(object_name(obj), " is not subscriptable"));
    }
    case Expr::Kind::Call: {
      Value fn = eval(arg(e, 0), frame);
      CallArgs args;
      eval_call_like(e, frame, args);
      return call(fn, args);
    }
    case Expr::Kind::Filter: {
      Value v = eval(arg(e, 0), frame);
      CallArgs args;
      eval_call_like(e, frame, args);
      return apply_filter(*this, e.name, v, args);
    }
    case Expr::Kind::Test: {
      Value v = eval(arg(e, 0), frame);
      CallArgs args;
      eval_call_like(e, frame, args);
      return Value(apply_test(*this, e.name, v, args) != e.negated);
    }
    case Expr::Kind::Neg:
    case Expr::Kind::Pos: {
      Value v = eval(arg(e, 0), frame);
      if (v.is_undefined()) undefined_error(v);
      bool neg = e.kind == Expr::Kind::Neg;
      if (intlike(v)) {
        if (!neg) return Value(int_of(v));
        if (int_of(v) == std::numeric_limits<int64_t>::min()) checked(true, 0);
        return Value(-int_of(v));
      }
      if (v.is_float()) return Value(neg ? -v.as_float() : v.as_float());
      runtime_error(str_cat("bad operand type for unary ", neg ? "-" : "+", ": '", v.type_name(), "'"));
    }
    case Expr::Kind::Not: return Value(!eval(arg(e, 0), frame).truthy());
    case Expr::Kind::Binary: return binary(e.name, eval(arg(e, 0), frame), eval(arg(e, 1), frame));
    case Expr::Kind::And: {
      Value l = eval(arg(e, 0), frame);
      return l.truthy() ? eval(arg(e, 1), frame) : l;
    }
    case Expr::Kind::Or: {
      Value l = eval(arg(e, 0), frame);
      return l.truthy() ? l : eval(arg(e, 1), frame);
    }
    case Expr::Kind::Compare: {
      Value left = eval(arg(e, 0), frame);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(arg(e, i + 1), frame);
        const std::string& op = e.ops[i];
        bool r;
        if (op == "==") r = left == right;
        else if (op == "!=") r = !(left == right);
        else if (op == "<") r = less(left, right);
        else if (op == ">") r = less(right, left);
        else if (op == "<=") r = less(left, right) || left == right;
        else if (op == ">=") r = less(right, left) || left == right;
        else if (op == "in") r = contains(right, left);
        else r = !contains(right, left);
        if (!r) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::Cond: {
      if (eval(arg(e, 1), frame).truthy()) return eval(arg(e, 0), frame);
      if (e.args[2]) return eval(arg(e, 2), frame);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
  }
  runtime_error("unknown expression");
}

}  // namespace vtllm::jinja
