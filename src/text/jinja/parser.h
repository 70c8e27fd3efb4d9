// The Jinja2 parser: tokens -> statement tree, with Jinja2 3.1's grammar and
// operator precedence (see Jinja2's parser.py: or < and < not < compare < + - <
// ~ < * / // % < ** < unary - + < postfix . [] () < filters | and tests `is`).
#pragma once

#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace vtllm::jinja {

struct ParseOptions {
  int max_depth = 200;  // nesting of expressions and blocks, against stack exhaustion
};

// Throws TemplateError(Syntax) with the line and column of the offending token, as
// Jinja2 does for unknown tags, unknown filters or tests, and unclosed blocks.
Body parse(const std::vector<Token>& tokens, const ParseOptions& options);

}  // namespace vtllm::jinja
