// The parsed form of a template: expression and statement trees.
//
// Nodes carry a kind and the source line for runtime errors; the fields a kind
// uses are listed beside it. The parser builds them, the interpreter walks them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace vtllm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,  // value
    Name,     // name
    List,     // args: elements
    Tuple,    // args: elements
    Dict,     // args: key0, value0, key1, value1, ...
    GetAttr,  // args[0] . name
    GetItem,  // args[0] [ args[1] ]
    Slice,    // args[0] [ args[1] : args[2] : args[3] ] (any of 1..3 may be null)
    Call,     // args[0] ( args[1..], kwargs )
    Filter,   // args[0] | name ( args[1..], kwargs ); args[0] null in {% filter %}
    Test,     // args[0] is [not] name ( args[1..], kwargs ); negated
    Neg,      // - args[0]
    Pos,      // + args[0]
    Not,      // not args[0]
    Binary,   // args[0] name args[1], name in + - * / // % ** ~
    And,      // args[0] and args[1]
    Or,       // args[0] or args[1]
    Compare,  // args[0] ops[0] args[1] ops[1] args[2] ... (== != < <= > >= in notin)
    Cond,     // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// The left side of an assignment: `x`, `a, b` or `ns.attr`.
struct Target {
  std::vector<std::string> names;  // one, or several for tuple unpacking
  std::string attr;                // set for `ns.attr`; names has one entry then
  bool tuple = false;
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  enum class Kind {
    Data,         // text
    Output,       // expr
    If,           // conds[i] -> bodies[i]; else_body
    For,          // target in expr [if cond] body else else_body; recursive
    Set,          // target = expr
    SetBlock,     // target = rendered body, through filters (Filter exprs with null operand)
    Macro,        // name(params) body
    CallBlock,    // expr is the call; params are caller()'s; body is caller()'s
    FilterBlock,  // filters applied to the rendered body
    With,         // assignments (targets[i] = values[i]) scoped to body
    Break,
    Continue,
    Scope,        // body rendered as is ({% generation %})
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<ExprPtr> conds;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  Target target;
  std::vector<Target> targets;
  std::vector<ExprPtr> values;
  std::vector<ExprPtr> filters;
  std::string name;
  std::vector<MacroParam> params;
  bool recursive = false;
};

}  // namespace vtllm::jinja
