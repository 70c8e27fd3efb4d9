// A GBNF grammar for any JSON value (RFC 8259 syntax; what a `json_object`
// response format constrains to). Whitespace between tokens is bounded (one
// line break and indentation for pretty-printing) so a model cannot emit it
// forever.
#pragma once

#include <string_view>

namespace vtllm::structured {

inline constexpr std::string_view kJsonGbnf = R"gbnf(
root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t]{0,16} | "\r"? "\n" [ \t]{0,64}
)gbnf";

}  // namespace vtllm::structured
