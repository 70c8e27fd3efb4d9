// The Jinja2 language, case by case. Every expected string below was produced by
// Python Jinja2 3.1 in transformers' environment (tools/text/render_jinja.py),
// not written by hand; errors expect Jinja2's own message.
#include <gtest/gtest.h>

#include <string>

#include "text/jinja/json.h"
#include "text/jinja/template.h"

namespace vtllm::jinja {
namespace {

struct Case {
  const char* name;
  const char* source;
  const char* context;   // JSON
  const char* expected;  // the output, or the error message when is_error
  bool is_error;
};

const Case kCases[] = {
    {"TrimBlocksDropsNewlineAfterBlockTag", "{% if true %}\nyes\n{% endif %}\nafter",
     "{}", "yes\nafter", false},
    {"LstripBlocksStripsIndentBeforeTag", "a\n    {% if true %}b{% endif %}\n  {# c #}\nd",
     "{}", "a\nbd", false},
    {"PlusDisablesLstrip", "a\n    {%+ if true %}b{% endif %}",
     "{}", "a\n    b", false},
    {"MinusStripsAllWhitespace", "a  \n\n  {{- 'b' -}}  \n\n  c",
     "{}", "abc", false},
    {"VariableTagsAreNotLstripped", "a\n    {{ 'b' }}",
     "{}", "a\n    b", false},
    {"TrailingNewlineDropped", "x\n",
     "{}", "x", false},
    {"CrLfNormalised", "a\r\nb\rc{% if true %}\r\nd{% endif %}",
     "{}", "a\nb\ncd", false},
    {"PythonFloatRepr", "{{ [1.0, 0.1, 1e16, 1e-5, 123456789.125, 2.5e-4, 1/3, -0.0] }}",
     "{}", "[1.0, 0.1, 1e+16, 1e-05, 123456789.125, 0.00025, 0.3333333333333333, -0.0]", false},
    {"IntegerAndTrueDivision", "{{ 7 / 2 }} {{ 6 / 3 }} {{ 7 // -2 }} {{ -7 % 4 }} {{ 7.0 // 2 }} {{ 2 ** 0.5 }}",
     "{}", "3.5 2.0 -4 1 3.0 1.4142135623730951", false},
    {"StringRepetitionAndConcat", "{{ '-' * 5 }}{{ 'a' ~ 3 ~ none }}",
     "{}", "-----a3None", false},
    {"PythonReprOfContainers", "{{ {'a': [1, 'x', none, true]} }} {{ ('t',) }} {{ ['it\\'s'] }}",
     "{}", "{'a': [1, 'x', None, True]} ('t',) [\"it's\"]", false},
    {"LoopFields", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
     "{}", "103TrueFalse3;212FalseFalse3;321FalseTrue3;", false},
    {"LoopElseAndFilter", "{% for x in [1, 2, 3] if x > 5 %}{{ x }}{% else %}none{% endfor %}",
     "{}", "none", false},
    {"BreakAndContinue", "{% for x in range(10) %}{% if x is even %}{% continue %}{% endif %}{% if x > 6 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     "{}", "135", false},
    {"LoopScopeDoesNotLeak", "{% set x = 'outer' %}{% for i in [1] %}{% set x = 'inner' %}{{ x }}{% endfor %} {{ x }}",
     "{}", "inner outer", false},
    {"NamespaceCarriesAcrossIterations", "{% set ns = namespace(total=0) %}{% for i in [1, 2, 3] %}{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total }}",
     "{}", "6", false},
    {"BlockSetWithFilter", "{% set x | upper %}ab{{ 'c' }}{% endset %}{{ x }}",
     "{}", "ABC", false},
    {"MacroDefaultsAndKeywords", "{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }} {{ m(1, c=3) }}",
     "{}", "1BNone 1B3", false},
    {"CallBlockWithCallerArgs", "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) each([1, 2]) %}<{{ v }}>{% endcall %}",
     "{}", "<1><2>", false},
    {"TojsonLikeTransformers", "{{ {'k': 'é\"\\n', 'n': [1, 2.0]}|tojson }} {{ [1]|tojson(indent=2) }}",
     "{}", "{\"k\": \"é\\\"\\n\", \"n\": [1, 2.0]} [\n  1\n]", false},
    {"UndefinedPrintsEmptyAndIsFalsy", "[{{ nope }}]{{ nope is defined }}{{ 'y' if not nope }}",
     "{}", "[]Falsey", false},
    {"DictAttributeFallsBackToKey", "{{ m.role }} {{ m['role'] }} {{ m.get('x', 'd') }} {{ m.missing is defined }}",
     "{\"m\": {\"role\": \"user\"}}", "user user d False", false},
    {"StringMethods", "{{ ' a b '.strip() }}|{{ 'a-b-c'.split('-', 1) }}|{{ 'x.y'.rsplit('.', 1)[0] }}|{{ 'ab'.startswith('a') }}|{{ 'ÉA'.lower() }}",
     "{}", "a b|['a', 'b-c']|x|True|éa", false},
    {"SlicesAndNegativeIndexes", "{{ 'héllo'[1:-1] }} {{ [1, 2, 3][::-1] }} {{ [1, 2, 3][-1] }}",
     "{}", "éll [3, 2, 1] 3", false},
    {"FilterChainsAndTests", "{{ ['b', 'a', 'B']|unique|map('upper')|join(',') }} {{ 3 is odd }} {{ none is none }} {{ 'x' is string }}",
     "{}", "B,A True True True", false},
    {"RaiseExceptionMessage", "{{ raise_exception('bad ' ~ 'input') }}",
     "{}", "bad input", true},
    {"UndefinedAttributeOfUndefinedRaises", "{{ nope.attr }}",
     "{}", "'nope' is undefined", true},
    {"AddingStringToIntRaises", "{{ 1 + 'a' }}",
     "{}", "unsupported operand type(s) for +: 'int' and 'str'", true},
    {"ListAppendIsUnsafe", "{{ xs.append(1) }}",
     "{\"xs\": []}", "access to attribute 'append' of 'list' object is unsafe.", true},
    {"RangeTooBig", "{{ range(200000)|length }}",
     "{}", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).", true},
};

class JinjaLanguage : public testing::TestWithParam<Case> {};

TEST_P(JinjaLanguage, MatchesJinja2) {
  const Case& c = GetParam();
  Template t(c.source);
  Value ctx = json_loads(c.context);
  if (!c.is_error) {
    EXPECT_EQ(t.render(ctx), c.expected);
    return;
  }
  try {
    std::string out = t.render(ctx);
    ADD_FAILURE() << "Jinja2 raises '" << c.expected << "', vtllm rendered: " << out;
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.message(), c.expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, JinjaLanguage, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace vtllm::jinja
