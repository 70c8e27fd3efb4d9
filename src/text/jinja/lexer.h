// The Jinja2 lexer: template source -> tokens, with Jinja2 3.1's whitespace rules.
//
// Before lexing, newlines are normalised as Jinja2 does (every str.splitlines()
// boundary becomes "\n" and one trailing newline is dropped). Whitespace control:
// `{%-`/`-%}` (and for `{{ }}`, `{# #}`) strip all whitespace on that side;
// trim_blocks drops the first newline after a block or comment tag; lstrip_blocks
// strips spaces and tabs before a block or comment tag that starts a line, unless
// the tag opens with `{%+`. Comments vanish; `{% raw %}` bodies become data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vtllm::jinja {

struct Token {
  enum class Type { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
  Type type;
  std::string text;  // Data text, name, operator, or the decoded string literal
  int64_t int_value = 0;
  double float_value = 0;
  int line = 0;
  int column = 0;
};

struct LexOptions {
  bool trim_blocks = true;    // as transformers sets them
  bool lstrip_blocks = true;
};

// Throws TemplateError(Syntax) naming line and column on a malformed tag or literal.
std::vector<Token> tokenize(std::string_view source, const LexOptions& options);

// Newline normalisation Jinja2 applies to a template's source before lexing.
std::string normalize_newlines(std::string_view source);

}  // namespace vtllm::jinja
