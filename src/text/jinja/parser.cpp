#include "text/jinja/parser.h"

#include <initializer_list>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"

namespace vtllm::jinja {

namespace {

using T = Token::Type;

std::string describe(const Token& t) {
  switch (t.type) {
    case T::Eof: return "end of template";
    case T::VarEnd: return "end of print statement";
    case T::BlockEnd: return "end of statement block";
    case T::VarBegin: return "begin of print statement";
    case T::BlockBegin: return "begin of statement block";
    case T::Data: return "template data";
    case T::String: return "string";
    case T::Int: return "integer";
    case T::Float: return "float";
    default: return t.text;
  }
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const ParseOptions& options) : toks_(tokens), opt_(options) {}

  Body parse_template() {
    Body body = subparse({});
    if (cur().type != T::Eof) fail(cur(), str_cat("unexpected '", describe(cur()), "'"));
    return body;
  }

 private:
  // ---- token helpers -------------------------------------------------------
  const Token& cur() const { return toks_[pos_]; }
  const Token& look() const { return toks_[pos_ + 1 < toks_.size() ? pos_ + 1 : pos_]; }
  void next() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return cur().type == T::Op && cur().text == op; }
  bool is_name(const char* name) const { return cur().type == T::Name && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const Token& t, const std::string& msg) const {
    throw TemplateError(TemplateError::Kind::Syntax, msg, t.line, t.column);
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(cur(), str_cat("expected token '", op, "', got '", describe(cur()), "'"));
  }
  std::string expect_name() {
    if (cur().type != T::Name) fail(cur(), str_cat("expected a name, got '", describe(cur()), "'"));
    std::string n = cur().text;
    next();
    return n;
  }
  void expect_block_end() {
    if (cur().type != T::BlockEnd)
      fail(cur(), str_cat("expected end of statement block, got '", describe(cur()), "'"));
    next();
  }

  struct Depth {
    Depth(Parser& p) : p_(p) {
      if (++p_.depth_ > p_.opt_.max_depth)
        p_.fail(p_.cur(), str_cat("template nests too deeply (more than ", p_.opt_.max_depth, " levels)"));
    }
    ~Depth() { --p_.depth_; }
    Parser& p_;
  };

  ExprPtr node(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    return e;
  }

  // ---- statements ----------------------------------------------------------
  // Parses until `{% name %}` with name in `ends` (left at the name) or the end.
  Body subparse(std::initializer_list<const char*> ends) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == T::Eof) {
        if (ends.size()) {
          std::string want;
          for (const char* e : ends) want += str_cat(want.empty() ? "" : " or ", "'", e, "'");
          fail(t, str_cat("unexpected end of template; looking for ", want));
        }
        return body;
      }
      if (t.type == T::Data) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Data;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == T::VarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Output;
        s->line = t.line;
        s->expr = parse_tuple(true, {}, false);
        if (cur().type != T::VarEnd)
          fail(cur(), str_cat("expected end of print statement, got '", describe(cur()), "'"));
        next();
        body.push_back(std::move(s));
      } else if (t.type == T::BlockBegin) {
        next();
        if (cur().type == T::Name)
          for (const char* e : ends)
            if (cur().text == e) return body;
        body.push_back(parse_statement());
      } else {
        fail(t, str_cat("unexpected '", describe(t), "'"));
      }
    }
  }

  // After a subparse stopped at `name`: consumes it and the block end.
  void end_tag() {
    next();
    expect_block_end();
  }

  StmtPtr parse_statement() {
    Depth d(*this);
    const Token& t = cur();
    if (t.type != T::Name) fail(t, "tag name expected");
    auto s = std::make_unique<Stmt>();
    s->line = t.line;
    std::string tag = t.text;
    next();
    if (tag == "if") {
      s->kind = Stmt::Kind::If;
      while (true) {
        s->conds.push_back(parse_tuple(false, {}, false));
        expect_block_end();
        s->bodies.push_back(subparse({"elif", "else", "endif"}));
        if (is_name("elif")) {
          next();
          continue;
        }
        if (is_name("else")) {
          end_tag();
          s->else_body = subparse({"endif"});
        }
        end_tag();
        return s;
      }
    }
    if (tag == "for") {
      s->kind = Stmt::Kind::For;
      s->target = parse_target(false);
      if (!skip_name("in")) fail(cur(), str_cat("expected 'in', got '", describe(cur()), "'"));
      s->expr = parse_tuple(false, {"recursive"}, false);
      if (skip_name("if")) s->cond = parse_expression(true);
      s->recursive = skip_name("recursive");
      expect_block_end();
      ++loop_depth_;
      s->body = subparse({"endfor", "else"});
      --loop_depth_;
      if (is_name("else")) {
        end_tag();
        s->else_body = subparse({"endfor"});
      }
      end_tag();
      return s;
    }
    if (tag == "set") {
      s->target = parse_target(true);
      if (skip_op("=")) {
        s->kind = Stmt::Kind::Set;
        s->expr = parse_tuple(true, {}, false);
        expect_block_end();
        return s;
      }
      s->kind = Stmt::Kind::SetBlock;
      if (s->target.tuple || !s->target.attr.empty())
        fail(t, "a block set assigns to a single name");
      parse_filter_chain(s->filters, false);
      expect_block_end();
      s->body = subparse({"endset"});
      end_tag();
      return s;
    }
    if (tag == "macro") {
      s->kind = Stmt::Kind::Macro;
      s->name = expect_name();
      parse_signature(s->params);
      expect_block_end();
      int saved = loop_depth_;
      loop_depth_ = 0;
      s->body = subparse({"endmacro"});
      loop_depth_ = saved;
      end_tag();
      return s;
    }
    if (tag == "call") {
      s->kind = Stmt::Kind::CallBlock;
      if (is_op("(")) parse_signature(s->params);
      s->expr = parse_expression(true);
      if (s->expr->kind != Expr::Kind::Call) fail(t, "expected call");
      expect_block_end();
      s->body = subparse({"endcall"});
      end_tag();
      return s;
    }
    if (tag == "filter") {
      s->kind = Stmt::Kind::FilterBlock;
      parse_filter_chain(s->filters, true);
      expect_block_end();
      s->body = subparse({"endfilter"});
      end_tag();
      return s;
    }
    if (tag == "with") {
      s->kind = Stmt::Kind::With;
      while (cur().type != T::BlockEnd) {
        if (!s->targets.empty()) expect_op(",");
        s->targets.push_back(parse_target(false));
        expect_op("=");
        s->values.push_back(parse_expression(true));
      }
      next();
      s->body = subparse({"endwith"});
      end_tag();
      return s;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail(t, str_cat("'", tag, "' outside of a loop"));
      s->kind = tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
      expect_block_end();
      return s;
    }
    if (tag == "generation") {
      s->kind = Stmt::Kind::Scope;
      expect_block_end();
      s->body = subparse({"endgeneration"});
      end_tag();
      return s;
    }
    fail(t, str_cat("encountered unknown tag '", tag, "'"));
  }

  // `name`, `a, b`, `(a, b)` or (with_namespace) `ns.attr`.
  Target parse_target(bool with_namespace) {
    Target tg;
    if (with_namespace && cur().type == T::Name && look().type == T::Op && look().text == ".") {
      tg.names.push_back(expect_name());
      next();
      tg.attr = expect_name();
      return tg;
    }
    bool paren = skip_op("(");
    while (true) {
      tg.names.push_back(expect_name());
      if (!skip_op(",")) break;
      tg.tuple = true;
      if (cur().type != T::Name) break;  // trailing comma
    }
    if (paren) expect_op(")");
    return tg;
  }

  void parse_signature(std::vector<MacroParam>& params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      MacroParam p;
      p.name = expect_name();
      if (skip_op("=")) p.default_value = parse_expression(true);
      else if (!params.empty() && params.back().default_value)
        fail(cur(), "non-default argument follows default argument");
      params.push_back(std::move(p));
    }
    next();
  }

  // `| f(args) | g` after `{% set x %}` or `{% filter %}` (which starts without a pipe).
  void parse_filter_chain(std::vector<ExprPtr>& out, bool start_inline) {
    while (start_inline || is_op("|")) {
      if (!start_inline) next();
      start_inline = false;
      out.push_back(parse_filter_call(nullptr));
    }
  }

  // ---- expressions -----------------------------------------------------------
  ExprPtr parse_expression(bool with_condexpr) {
    Depth d(*this);
    if (!with_condexpr) return parse_or();
    ExprPtr e = parse_or();
    while (is_name("if")) {
      const Token& at = cur();
      next();
      auto c = node(Expr::Kind::Cond, at);
      ExprPtr test = parse_or();
      ExprPtr other = skip_name("else") ? parse_expression(true) : nullptr;
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(test));
      c->args.push_back(std::move(other));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(Expr::Kind kind, const Token& at, std::string op, ExprPtr l, ExprPtr r) {
    auto b = node(kind, at);
    b->name = std::move(op);
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    while (is_name("or")) {
      const Token& at = cur();
      next();
      l = binary(Expr::Kind::Or, at, "or", std::move(l), parse_and());
    }
    return l;
  }

  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    while (is_name("and")) {
      const Token& at = cur();
      next();
      l = binary(Expr::Kind::And, at, "and", std::move(l), parse_not());
    }
    return l;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      Depth d(*this);
      const Token& at = cur();
      next();
      auto n = node(Expr::Kind::Not, at);
      n->args.push_back(parse_not());
      return n;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& at = cur();
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == T::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                  cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && look().type == T::Name && look().text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::Compare, at);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = cur();
      std::string op = at.text;
      next();
      l = binary(Expr::Kind::Binary, at, op, std::move(l), parse_concat());
    }
    return l;
  }

  ExprPtr parse_concat() {
    ExprPtr l = parse_math2();
    while (is_op("~")) {
      const Token& at = cur();
      next();
      l = binary(Expr::Kind::Binary, at, "~", std::move(l), parse_math2());
    }
    return l;
  }

  ExprPtr parse_math2() {
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = cur();
      std::string op = at.text;
      next();
      l = binary(Expr::Kind::Binary, at, op, std::move(l), parse_pow());
    }
    return l;
  }

  ExprPtr parse_pow() {
    ExprPtr l = parse_unary(true);
    while (is_op("**")) {
      const Token& at = cur();
      next();
      l = binary(Expr::Kind::Binary, at, "**", std::move(l), parse_unary(true));
    }
    return l;
  }

  ExprPtr parse_unary(bool with_filter) {
    Depth d(*this);
    const Token& at = cur();
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      next();
      e = node(at.text == "-" ? Expr::Kind::Neg : Expr::Kind::Pos, at);
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_postfix(parse_primary());
    }
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    Depth d(*this);
    const Token& t = cur();
    ExprPtr e;
    switch (t.type) {
      case T::Name:
        e = node(Expr::Kind::Literal, t);
        if (t.text == "true" || t.text == "True") e->value = Value(true);
        else if (t.text == "false" || t.text == "False") e->value = Value(false);
        else if (t.text == "none" || t.text == "None") e->value = Value::none();
        else {
          e->kind = Expr::Kind::Name;
          e->name = t.text;
        }
        next();
        return e;
      case T::String: {
        std::string s;
        while (cur().type == T::String) {
          s += cur().text;
          next();
        }
        e = node(Expr::Kind::Literal, t);
        e->value = Value(std::move(s));
        return e;
      }
      case T::Int:
        e = node(Expr::Kind::Literal, t);
        e->value = Value(t.int_value);
        next();
        return e;
      case T::Float:
        e = node(Expr::Kind::Literal, t);
        e->value = Value(t.float_value);
        next();
        return e;
      case T::Op:
        if (t.text == "(") {
          next();
          e = parse_tuple(true, {}, true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default: break;
    }
    fail(t, str_cat("unexpected '", describe(t), "'"));
  }

  bool tuple_end(std::initializer_list<const char*> extra_end) const {
    if (cur().type == T::VarEnd || cur().type == T::BlockEnd || cur().type == T::Eof || is_op(")")) return true;
    for (const char* e : extra_end)
      if (is_name(e)) return true;
    return false;
  }

  ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<const char*> extra_end, bool explicit_parens) {
    const Token& at = cur();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) fail(cur(), str_cat("expected an expression, got '", describe(cur()), "'"));
    }
    auto t = node(Expr::Kind::Tuple, at);
    t->args = std::move(items);
    return t;
  }

  ExprPtr parse_list() {
    auto l = node(Expr::Kind::List, cur());
    expect_op("[");
    while (!is_op("]")) {
      if (!l->args.empty()) expect_op(",");
      if (is_op("]")) break;
      l->args.push_back(parse_expression(true));
    }
    expect_op("]");
    return l;
  }

  ExprPtr parse_dict() {
    auto d = node(Expr::Kind::Dict, cur());
    expect_op("{");
    while (!is_op("}")) {
      if (!d->args.empty()) expect_op(",");
      if (is_op("}")) break;
      d->args.push_back(parse_expression(true));
      expect_op(":");
      d->args.push_back(parse_expression(true));
    }
    expect_op("}");
    return d;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".") || is_op("[")) e = parse_subscript(std::move(e));
      else if (is_op("(")) e = parse_call(std::move(e));
      else return e;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        next();
        e = parse_filter_call(std::move(e));
      } else if (is_name("is")) {
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    Depth d(*this);
    const Token& at = cur();
    if (skip_op(".")) {
      const Token& t = cur();
      if (t.type == T::Name) {
        auto g = node(Expr::Kind::GetAttr, at);
        g->name = t.text;
        g->args.push_back(std::move(obj));
        next();
        return g;
      }
      if (t.type == T::Int) {
        auto g = node(Expr::Kind::GetItem, at);
        g->args.push_back(std::move(obj));
        auto k = node(Expr::Kind::Literal, t);
        k->value = Value(t.int_value);
        g->args.push_back(std::move(k));
        next();
        return g;
      }
      fail(t, "expected name or number");
    }
    expect_op("[");
    std::vector<ExprPtr> subs;
    while (!is_op("]")) {
      if (!subs.empty()) expect_op(",");
      subs.push_back(parse_subscribed());
    }
    expect_op("]");
    if (subs.size() == 1 && subs[0]->kind == Expr::Kind::Slice) {
      subs[0]->args.insert(subs[0]->args.begin(), std::move(obj));
      return std::move(subs[0]);
    }
    auto g = node(Expr::Kind::GetItem, at);
    g->args.push_back(std::move(obj));
    if (subs.size() == 1) {
      g->args.push_back(std::move(subs[0]));
    } else {
      auto t = node(Expr::Kind::Tuple, at);
      t->args = std::move(subs);
      g->args.push_back(std::move(t));
    }
    return g;
  }

  // One subscript: an expression or a slice `a:b:c` (Slice node without its object).
  ExprPtr parse_subscribed() {
    const Token& at = cur();
    std::vector<ExprPtr> parts;
    if (skip_op(":")) {
      parts.push_back(nullptr);
    } else {
      ExprPtr e = parse_expression(true);
      if (!skip_op(":")) return e;
      parts.push_back(std::move(e));
    }
    if (is_op(":") || is_op("]") || is_op(",")) parts.push_back(nullptr);
    else parts.push_back(parse_expression(true));
    if (skip_op(":")) {
      if (is_op("]") || is_op(",")) parts.push_back(nullptr);
      else parts.push_back(parse_expression(true));
    } else {
      parts.push_back(nullptr);
    }
    auto s = node(Expr::Kind::Slice, at);
    s->args = std::move(parts);
    return s;
  }

  void parse_call_args(Expr& call) {
    expect_op("(");
    bool seen_keyword = false;
    bool first = true;
    while (!is_op(")")) {
      if (!first) {
        expect_op(",");
        if (is_op(")")) break;
      }
      first = false;
      if (cur().type == T::Name && look().type == T::Op && look().text == "=") {
        std::string key = cur().text;
        next();
        next();
        call.kwargs.emplace_back(key, parse_expression(true));
        seen_keyword = true;
      } else {
        if (seen_keyword) fail(cur(), "positional argument follows keyword argument");
        call.args.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    Depth d(*this);
    auto c = node(Expr::Kind::Call, cur());
    c->args.push_back(std::move(callee));
    parse_call_args(*c);
    return c;
  }

  std::string dotted_name() {
    std::string name = expect_name();
    while (is_op(".")) {
      next();
      name += "." + expect_name();
    }
    return name;
  }

  ExprPtr parse_filter_call(ExprPtr operand) {
    Depth d(*this);
    const Token& at = cur();
    auto f = node(Expr::Kind::Filter, at);
    f->name = dotted_name();
    if (!has_filter(f->name)) fail(at, str_cat("no filter named '", f->name, "'"));
    f->args.push_back(std::move(operand));
    if (is_op("(")) parse_call_args(*f);
    return f;
  }

  ExprPtr parse_test(ExprPtr operand) {
    Depth d(*this);
    next();  // 'is'
    bool negated = skip_name("not");
    const Token& at = cur();
    auto t = node(Expr::Kind::Test, at);
    t->name = dotted_name();
    if (!has_test(t->name)) fail(at, str_cat("no test named '", t->name, "'"));
    t->negated = negated;
    t->args.push_back(std::move(operand));
    if (is_op("(")) {
      parse_call_args(*t);
    } else if ((cur().type == T::Name || cur().type == T::String || cur().type == T::Int ||
                cur().type == T::Float || is_op("(") || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail(cur(), "you cannot chain multiple tests with is");
      t->args.push_back(parse_postfix(parse_primary()));
    }
    return t;
  }

  const std::vector<Token>& toks_;
  ParseOptions opt_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens, const ParseOptions& options) {
  return Parser(tokens, options).parse_template();
}

}  // namespace vtllm::jinja
