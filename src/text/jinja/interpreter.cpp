// Statement execution, scopes, macros and the globals for the interpreter.
#include "text/jinja/interpreter.h"

#include <cstdio>

#include "text/jinja/builtins.h"
#include "text/jinja/pystr.h"

namespace vtllm::jinja {

const Value* Frame::find(const std::string& name) const {
  for (const Frame* f = this; f; f = f->parent.get())
    for (const auto& [k, v] : f->vars)
      if (k == name) return &v;
  return nullptr;
}

void Frame::set(const std::string& name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(name, std::move(value));
}

namespace {

// Python's datetime.strftime: %f is the microsecond, the rest is C strftime.
std::string py_strftime(const std::string& format, const Now& now) {
  std::string fmt;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '%' && i + 1 < format.size() && format[i + 1] == 'f') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "%06d", now.microsecond);
      fmt += buf;
      ++i;
    } else if (format[i] == '%' && i + 1 < format.size()) {
      fmt += format.substr(i, 2);
      ++i;
    } else {
      fmt.push_back(format[i]);
    }
  }
  if (fmt.empty()) return "";
  std::string out(fmt.size() * 4 + 64, '\0');
  fmt.push_back(' ');  // strftime's 0 return is ambiguous for empty output; a sentinel avoids it
  size_t n = std::strftime(out.data(), out.size(), fmt.c_str(), &now.tm);
  if (n == 0) runtime_error("strftime_now: format produces too long a string");
  out.resize(n - 1);
  return out;
}

}  // namespace

Interpreter::Interpreter(const RenderLimits& limits, const Clock& clock, const Value& context)
    : limits_(limits), clock_(clock ? clock : Clock(system_now)), root_(std::make_shared<Frame>()) {
  root_->set("range", Value::callable("range", [](CallArgs& a) {
    check_args(a, "range", 3, {});
    std::vector<int64_t> n;
    for (const Value& v : a.positional) {
      if (!v.is_int() && !v.is_bool())
        runtime_error(str_cat("'", v.type_name(), "' object cannot be interpreted as an integer"));
      n.push_back(v.is_bool() ? v.as_bool() : v.as_int());
    }
    if (n.empty()) runtime_error("range expected at least 1 argument, got 0");
    int64_t start = n.size() > 1 ? n[0] : 0, stop = n.size() > 1 ? n[1] : n[0], step = n.size() > 2 ? n[2] : 1;
    if (step == 0) runtime_error("range() arg 3 must not be zero");
    int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                             : (start > stop ? (start - stop - step - 1) / -step : 0);
    // The sandbox's MAX_RANGE.
    if (count > 100000) runtime_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    std::vector<Value> out;
    for (int64_t i = 0; i < count; ++i) out.emplace_back(start + i * step);
    return Value::list(std::move(out));
  }));
  root_->set("dict", Value::callable("dict", [](CallArgs& a) {
    DictData d;
    if (a.positional.size() > 1) runtime_error("dict expected at most 1 argument");
    if (!a.positional.empty()) {
      if (!a.positional[0].is_dict()) runtime_error("dict() takes a mapping in vtllm's templates");
      d = a.positional[0].dict();
    }
    for (auto& [k, v] : a.keyword) d.set(Value(k), v);
    return Value::mapping(std::move(d));
  }));
  root_->set("namespace", Value::callable("namespace", [this](CallArgs& a) {
    DictData d;
    if (a.positional.size() > 1) runtime_error("namespace expected at most 1 positional argument");
    if (!a.positional.empty()) {
      if (!a.positional[0].is_dict()) runtime_error("namespace() takes a mapping as its positional argument");
      for (const auto& [k, v] : a.positional[0].dict().entries) d.set(k, v);
    }
    for (auto& [k, v] : a.keyword) d.set(Value(k), v);
    Value ns = Value::ns(std::move(d));
    namespaces_.push_back(ns);
    return ns;
  }));
  root_->set("raise_exception", Value::callable("raise_exception", [](CallArgs& a) -> Value {
    const Value* m = arg(a, 0, "message");
    throw TemplateError(TemplateError::Kind::Raised, m ? to_str(*m) : std::string());
  }));
  root_->set("strftime_now", Value::callable("strftime_now", [this](CallArgs& a) {
    check_args(a, "strftime_now", 1, {"format"});
    const Value* f = arg(a, 0, "format");
    if (!f || !f->is_string()) runtime_error("strftime_now() takes a format string");
    return Value(py_strftime(f->as_string(), clock_()));
  }));
  if (context.is_dict()) {
    for (const auto& [k, v] : context.dict().entries)
      if (k.is_string()) root_->set(k.as_string(), v);
  } else if (!context.is_undefined() && !context.is_none()) {
    runtime_error("the render context must be a dict");
  }
}

Interpreter::~Interpreter() {
  // A namespace may hold itself (set ns.me = ns); emptying them all frees the cycles.
  for (Value& ns : namespaces_) ns.dict().entries.clear();
}

std::string Interpreter::render(const Body& body) {
  std::string out;
  auto top = std::make_shared<Frame>();
  top->parent = root_;
  exec_body(body, top, out);
  return out;
}

void Interpreter::emit(std::string& out, std::string_view text) {
  emitted_ += text.size();
  if (emitted_ > limits_.max_output_bytes)
    throw TemplateError(TemplateError::Kind::Limit,
                        str_cat("the template wrote more than ", limits_.max_output_bytes, " bytes"));
  out.append(text);
}

Value Interpreter::lookup(const std::string& name, const FramePtr& frame) {
  if (const Value* v = frame->find(name)) return *v;
  return Value::undefined(str_cat("'", name, "' is undefined"));
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const FramePtr& frame, std::string& out) {
  for (const StmtPtr& s : body) {
    Flow f;
    try {
      f = exec(*s, frame, out);
    } catch (const TemplateError& e) {
      if (e.line() || e.kind() == TemplateError::Kind::Raised) throw;
      throw TemplateError(e.kind(), e.message(), s->line);
    }
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

void Interpreter::assign(const Target& t, const Value& value, const FramePtr& frame) {
  if (!t.attr.empty()) {
    Value ns = lookup(t.names[0], frame);
    if (!ns.is_namespace()) runtime_error("cannot assign attribute on non-namespace object");
    ns.dict().set(Value(t.attr), value);
    return;
  }
  if (!t.tuple) {
    frame->set(t.names[0], value);
    return;
  }
  std::vector<Value> items = iterate(value);
  if (items.size() != t.names.size())
    runtime_error(items.size() > t.names.size()
                      ? str_cat("too many values to unpack (expected ", t.names.size(), ")")
                      : str_cat("not enough values to unpack (expected ", t.names.size(), ", got ", items.size(), ")"));
  for (size_t i = 0; i < items.size(); ++i) frame->set(t.names[i], items[i]);
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const FramePtr& frame, std::string& out) {
  switch (s.kind) {
    case Stmt::Kind::Data: emit(out, s.text); return Flow::Normal;
    case Stmt::Kind::Output: {
      Value v = eval(*s.expr, frame);
      emit(out, to_str(v));
      return Flow::Normal;
    }
    case Stmt::Kind::If:
      for (size_t i = 0; i < s.conds.size(); ++i)
        if (eval(*s.conds[i], frame).truthy()) return exec_body(s.bodies[i], frame, out);
      return exec_body(s.else_body, frame, out);
    case Stmt::Kind::For: exec_for(s, frame, out); return Flow::Normal;
    case Stmt::Kind::Set: assign(s.target, eval(*s.expr, frame), frame); return Flow::Normal;
    case Stmt::Kind::SetBlock: {
      std::string captured;
      auto inner = std::make_shared<Frame>();
      inner->parent = frame;
      exec_body(s.body, inner, captured);
      Value v(std::move(captured));
      for (const ExprPtr& f : s.filters) {
        CallArgs args;
        eval_call_like(*f, frame, args);
        v = apply_filter(*this, f->name, v, args);
      }
      assign(s.target, v, frame);
      return Flow::Normal;
    }
    case Stmt::Kind::Macro: exec_macro(s, frame); return Flow::Normal;
    case Stmt::Kind::CallBlock: exec_call_block(s, frame, out); return Flow::Normal;
    case Stmt::Kind::FilterBlock: {
      std::string captured;
      Flow f = exec_body(s.body, frame, captured);
      Value v(std::move(captured));
      for (const ExprPtr& fl : s.filters) {
        CallArgs args;
        eval_call_like(*fl, frame, args);
        v = apply_filter(*this, fl->name, v, args);
      }
      emit(out, to_str(v));
      return f;
    }
    case Stmt::Kind::With: {
      auto inner = std::make_shared<Frame>();
      inner->parent = frame;
      for (size_t i = 0; i < s.targets.size(); ++i) assign(s.targets[i], eval(*s.values[i], frame), inner);
      return exec_body(s.body, inner, out);
    }
    case Stmt::Kind::Break: return Flow::Break;
    case Stmt::Kind::Continue: return Flow::Continue;
    case Stmt::Kind::Scope: return exec_body(s.body, frame, out);
  }
  return Flow::Normal;
}

void Interpreter::exec_for(const Stmt& s, const FramePtr& frame, std::string& out) {
  if (s.recursive) runtime_error("recursive for-loops are not supported");
  std::vector<Value> items = iterate(eval(*s.expr, frame));
  if (s.cond) {
    std::vector<Value> kept;
    for (const Value& item : items) {
      auto probe = std::make_shared<Frame>();
      probe->parent = frame;
      assign(s.target, item, probe);
      if (eval(*s.cond, probe).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(s.else_body, frame, out);
    return;
  }
  const int64_t n = static_cast<int64_t>(items.size());
  // loop.changed(...)'s memory: (whether it has been called, the last arguments).
  auto changed = std::make_shared<std::pair<bool, std::vector<Value>>>();
  for (int64_t i = 0; i < n; ++i) {
    if (++iterations_ > limits_.max_loop_iterations)
      throw TemplateError(TemplateError::Kind::Limit,
                          str_cat("loops ran more than ", limits_.max_loop_iterations, " iterations"));
    auto inner = std::make_shared<Frame>();
    inner->parent = frame;
    DictData loop;
    loop.set(Value("index"), Value(i + 1));
    loop.set(Value("index0"), Value(i));
    loop.set(Value("revindex"), Value(n - i));
    loop.set(Value("revindex0"), Value(n - i - 1));
    loop.set(Value("first"), Value(i == 0));
    loop.set(Value("last"), Value(i == n - 1));
    loop.set(Value("length"), Value(n));
    loop.set(Value("depth"), Value(1));
    loop.set(Value("depth0"), Value(0));
    loop.set(Value("previtem"), i > 0 ? items[static_cast<size_t>(i - 1)]
                                      : Value::undefined("there is no previous item"));
    loop.set(Value("nextitem"), i + 1 < n ? items[static_cast<size_t>(i + 1)]
                                          : Value::undefined("there is no next item"));
    loop.set(Value("cycle"), Value::callable("cycle", [i](CallArgs& a) {
      if (a.positional.empty()) runtime_error("no items for cycling given");
      return a.positional[static_cast<size_t>(i) % a.positional.size()];
    }));
    loop.set(Value("changed"), Value::callable("changed", [changed](CallArgs& a) {
      if (changed->first && changed->second == a.positional) return Value(false);
      *changed = {true, a.positional};
      return Value(true);
    }));
    inner->set("loop", Value::mapping(std::move(loop)));
    assign(s.target, items[static_cast<size_t>(i)], inner);
    Flow f = exec_body(s.body, inner, out);
    if (f == Flow::Break) break;
  }
}

Value Interpreter::make_macro(const std::string& name, const std::vector<MacroParam>& params, const Body& body,
                              const FramePtr& frame, bool is_caller) {
  std::weak_ptr<Frame> scope = frame;
  const std::vector<MacroParam>* ps = &params;
  const Body* b = &body;
  return Value::callable(name, [this, name, scope, ps, b, is_caller](CallArgs& a) {
    FramePtr parent = scope.lock();
    if (!parent) runtime_error(str_cat("macro '", name, "' was called after its scope ended"));
    if (++call_depth_ > limits_.max_call_depth) {
      --call_depth_;
      throw TemplateError(TemplateError::Kind::Limit,
                          str_cat("macro calls nest more than ", limits_.max_call_depth, " deep"));
    }
    struct Release {
      int& d;
      ~Release() { --d; }
    } release{call_depth_};
    auto inner = std::make_shared<Frame>();
    inner->parent = parent;
    if (a.positional.size() > ps->size())
      runtime_error(str_cat(is_caller ? "caller" : str_cat("macro '", name, "'"), " takes not more than ",
                            ps->size(), " argument(s)"));
    std::vector<bool> given(ps->size(), false);
    for (size_t i = 0; i < a.positional.size(); ++i) {
      inner->set((*ps)[i].name, a.positional[i]);
      given[i] = true;
    }
    for (auto& [k, v] : a.keyword) {
      bool found = false;
      for (size_t i = 0; i < ps->size(); ++i) {
        if ((*ps)[i].name != k) continue;
        if (given[i]) runtime_error(str_cat("macro '", name, "' got multiple values for argument '", k, "'"));
        inner->set(k, v);
        given[i] = found = true;
      }
      if (!found && k == "caller" && !is_caller) {
        inner->set("caller", v);
        found = true;
      }
      if (!found) runtime_error(str_cat("macro '", name, "' takes no keyword argument '", k, "'"));
    }
    for (size_t i = 0; i < ps->size(); ++i) {
      if (given[i]) continue;
      const MacroParam& p = (*ps)[i];
      inner->set(p.name, p.default_value ? eval(*p.default_value, inner)
                                         : Value::undefined(str_cat("parameter '", p.name, "' was not provided")));
    }
    std::string out;
    exec_body(*b, inner, out);
    return Value(std::move(out));
  });
}

void Interpreter::exec_macro(const Stmt& s, const FramePtr& frame) {
  frame->set(s.name, make_macro(s.name, s.params, s.body, frame, false));
}

void Interpreter::exec_call_block(const Stmt& s, const FramePtr& frame, std::string& out) {
  Value fn = eval(*s.expr->args[0], frame);
  CallArgs args;
  eval_call_like(*s.expr, frame, args);
  args.keyword.emplace_back("caller", make_macro("caller", s.params, s.body, frame, true));
  emit(out, to_str(call(fn, args)));
}

}  // namespace vtllm::jinja
