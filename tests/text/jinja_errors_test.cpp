// Bad and hostile templates: syntax errors name line and column, runtime errors
// name the line, and every bound (recursion, loops, output, nesting) ends in a
// TemplateError instead of a crash or a hang.
#include <gtest/gtest.h>

#include <string>

#include "text/jinja/json.h"
#include "text/jinja/template.h"

namespace vtllm::jinja {
namespace {

TemplateError syntax_error(const std::string& source) {
  try {
    Template t(source);
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "no syntax error for: " << source;
  return TemplateError(TemplateError::Kind::Runtime, "none");
}

TemplateError render_error(const std::string& source, const std::string& context = "{}",
                           TemplateOptions options = {}) {
  Template t(source, options);
  try {
    std::string out = t.render(json_loads(context));
    ADD_FAILURE() << "rendered without error: " << out.substr(0, 200);
  } catch (const TemplateError& e) {
    return e;
  }
  return TemplateError(TemplateError::Kind::Syntax, "none");
}

TEST(JinjaErrors, MismatchedEndTagNamesLineAndColumn) {
  TemplateError e = syntax_error("line one\n{% if x %}\n  {% endfor %}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.column(), 6);
  EXPECT_NE(std::string(e.what()).find("line 3, column 6"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("endfor"), std::string::npos) << e.what();
}

TEST(JinjaErrors, UnknownFilterAndTestAreSyntaxErrors) {
  TemplateError f = syntax_error("ok\n{{ x | no_such_filter }}");
  EXPECT_EQ(f.line(), 2);
  EXPECT_EQ(f.column(), 8);
  EXPECT_NE(f.message().find("no_such_filter"), std::string::npos);
  TemplateError t = syntax_error("{{ x is no_such_test }}");
  EXPECT_EQ(t.column(), 9);
}

TEST(JinjaErrors, UnclosedBlockSaysWhatItWanted) {
  TemplateError e = syntax_error("{% for m in messages %}{{ m }}");
  EXPECT_NE(e.message().find("endfor"), std::string::npos) << e.what();
}

TEST(JinjaErrors, UnterminatedStringAndCommentAndTag) {
  EXPECT_EQ(syntax_error("a\n{{ 'abc }}").line(), 2);
  EXPECT_EQ(syntax_error("{# never closed").kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(syntax_error("{{ x ").kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(syntax_error("{{ (1 }}").kind(), TemplateError::Kind::Syntax);
}

TEST(JinjaErrors, UnknownTagAndDoAreRejectedAsTransformersDoes) {
  // transformers does not load jinja2.ext.do; {% do %} is an unknown tag there.
  EXPECT_NE(syntax_error("{% do x.append(1) %}").message().find("'do'"), std::string::npos);
  EXPECT_EQ(syntax_error("{% break %}").kind(), TemplateError::Kind::Syntax);
}

TEST(JinjaErrors, RuntimeErrorNamesTheLine) {
  TemplateError e = render_error("a\nb\n{{ 1 + 'a' }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Runtime);
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(std::string(e.what()), "line 3: unsupported operand type(s) for +: 'int' and 'str'");
}

TEST(JinjaErrors, RaiseExceptionCarriesOnlyTheTemplatesMessage) {
  TemplateError e = render_error("{% if messages|length == 0 %}{{ raise_exception('No messages!') }}{% endif %}",
                                 R"({"messages": []})");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Raised);
  EXPECT_EQ(std::string(e.what()), "No messages!");
}

TEST(JinjaErrors, UndefinedUsedWhereJinjaRaises) {
  EXPECT_EQ(render_error("{{ m.content.upper() }}", R"({"m": {}})").message(),
            "'dict object' has no attribute 'content'");
  EXPECT_EQ(render_error("{{ nope['x'] }}").message(), "'nope' is undefined");
  EXPECT_EQ(render_error("{{ nope() }}").message(), "'nope' is undefined");
  EXPECT_EQ(render_error("{{ nope < 1 }}").message(), "'nope' is undefined");
}

TEST(JinjaErrors, InfiniteMacroRecursionIsBounded) {
  TemplateError e = render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Limit);
}

TEST(JinjaErrors, LoopIterationsAreBounded) {
  TemplateOptions o;
  o.limits.max_loop_iterations = 5000;
  TemplateError e =
      render_error("{% for a in range(100) %}{% for b in range(100) %}{% endfor %}{% endfor %}", "{}", o);
  EXPECT_EQ(e.kind(), TemplateError::Kind::Limit);
  // Just under the bound renders.
  EXPECT_EQ(Template("{% for a in range(49) %}{% for b in range(100) %}{% endfor %}{% endfor %}ok", o)
                .render(Value::mapping()),
            "ok");
}

TEST(JinjaErrors, DoublingStringsAndListsAreBounded) {
  TemplateError s = render_error(
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}");
  EXPECT_EQ(s.kind(), TemplateError::Kind::Limit);
  TemplateError l = render_error(
      "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}");
  EXPECT_EQ(l.kind(), TemplateError::Kind::Limit);
  EXPECT_EQ(render_error("{{ 'ab' * 100000000000 }}").kind(), TemplateError::Kind::Limit);
}

TEST(JinjaErrors, OutputSizeIsBounded) {
  TemplateOptions o;
  o.limits.max_output_bytes = 1000;
  EXPECT_EQ(render_error("{% for i in range(2000) %}x{% endfor %}", "{}", o).kind(), TemplateError::Kind::Limit);
}

TEST(JinjaErrors, DeepExpressionNestingIsASyntaxErrorNotACrash) {
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_EQ(syntax_error(deep).kind(), TemplateError::Kind::Syntax);
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  nots += "1 }}";
  EXPECT_EQ(syntax_error(nots).kind(), TemplateError::Kind::Syntax);
  std::string blocks;
  for (int i = 0; i < 5000; ++i) blocks += "{% if true %}";
  EXPECT_EQ(syntax_error(blocks).kind(), TemplateError::Kind::Syntax);
}

TEST(JinjaErrors, DeeplyNestedValuesAreBounded) {
  TemplateError e = render_error(
      "{% set ns = namespace(v=1) %}{% for i in range(2000) %}{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Limit);
  std::string deep_json = std::string(2000, '[') + std::string(2000, ']');
  EXPECT_THROW(json_loads(deep_json), TemplateError);
}

TEST(JinjaErrors, SelfReferenceThroughANamespaceRendersAndIsFreed) {
  // Under ASan's leak checker a reference cycle left behind would fail this test.
  Template t("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me is defined }}");
  EXPECT_EQ(t.render(Value::mapping()), "True");
}

TEST(JinjaErrors, StrftimeNowReadsTheClock) {
  TemplateOptions o;
  o.clock = [] {
    Now n;
    n.tm.tm_year = 2024 - 1900;
    n.tm.tm_mon = 6;
    n.tm.tm_mday = 26;
    n.tm.tm_hour = 9;
    n.tm.tm_min = 5;
    n.tm.tm_sec = 7;
    n.microsecond = 42;
    return n;
  };
  Template t("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%H:%M:%S.%f') }}|{{ strftime_now('') }}", o);
  EXPECT_EQ(t.render(Value::mapping()), "26 Jul 2024|09:05:07.000042|");
}

}  // namespace
}  // namespace vtllm::jinja
