// The tree-walking evaluator behind jinja::Template (internal to src/text/jinja).
//
// Scopes follow Jinja2: each for-loop iteration, macro call and `with` block gets a
// fresh frame whose parent is the enclosing one, so `set` inside them does not
// leak out; `if` opens no scope. Lookup walks the frames, then the render context,
// then the globals (range, dict, namespace, raise_exception, strftime_now).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/template.h"
#include "text/jinja/value.h"

namespace vtllm::jinja {

struct Frame {
  std::shared_ptr<Frame> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value value);
};
using FramePtr = std::shared_ptr<Frame>;

class Interpreter {
 public:
  Interpreter(const RenderLimits& limits, const Clock& clock, const Value& context);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string render(const Body& body);

  // Jinja2's sandboxed attribute and item lookup (environment.getattr/getitem):
  // attribute first then item for `.`, item first then attribute for `[]`; a miss
  // is an undefined value that remembers why.
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);
  Value call(const Value& fn, CallArgs& args);
  // `a op b` for + - * / // % ** ~ with Python's rules.
  Value binary(const std::string& op, const Value& a, const Value& b);
  // Python's < (raises TypeError semantics as a TemplateError for mixed types).
  bool less(const Value& a, const Value& b);
  bool contains(const Value& container, const Value& item);
  // The items a for-loop (or list()) walks: list items, dict keys, string characters.
  std::vector<Value> iterate(const Value& v);
  // Throws TemplateError(Limit) when a value of `bytes` would exceed the output bound
  // (a string's bytes; a list's items count sizeof(Value) each).
  void check_size(size_t bytes) const;
  const Clock& clock() const { return clock_; }

 private:
  enum class Flow { Normal, Break, Continue };

  Flow exec_body(const Body& body, const FramePtr& frame, std::string& out);
  Flow exec(const Stmt& s, const FramePtr& frame, std::string& out);
  void exec_for(const Stmt& s, const FramePtr& frame, std::string& out);
  void exec_macro(const Stmt& s, const FramePtr& frame);
  void exec_call_block(const Stmt& s, const FramePtr& frame, std::string& out);
  void assign(const Target& target, const Value& value, const FramePtr& frame);
  Value make_macro(const std::string& name, const std::vector<MacroParam>& params, const Body& body,
                   const FramePtr& frame, bool is_caller);
  Value eval(const Expr& e, const FramePtr& frame);
  Value eval_call_like(const Expr& e, const FramePtr& frame, CallArgs& args);
  Value lookup(const std::string& name, const FramePtr& frame);
  void emit(std::string& out, std::string_view text);

  RenderLimits limits_;
  Clock clock_;
  FramePtr root_;
  std::vector<Value> namespaces_;  // cleared after rendering, to break reference cycles
  int64_t iterations_ = 0;
  size_t emitted_ = 0;
  int call_depth_ = 0;
  int eval_depth_ = 0;
};

}  // namespace vtllm::jinja
