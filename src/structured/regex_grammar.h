// Regex and choice front ends: both produce a Grammar (grammar.h).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "structured/grammar.h"

namespace vtllm::structured {

// The grammar of the strings that match `pattern` ENTIRELY (as vLLM's `regex`
// output constraint; a leading ^ and trailing $ are accepted and change
// nothing). The JSON-Schema `pattern` subset of ECMAScript: literals and
// escapes (\n \t \r \f \v \0 \xHH \uHHHH \/ and escaped punctuation), classes
// [...] / [^...] with ranges, \d \w \s \D \W \S, `.` (any code point but \n \r
// U+2028 U+2029), groups ( ) (?: ) (?<name> ), alternation, quantifiers * + ?
// {m} {m,} {m,n} (lazy forms too: same language). Backreferences,
// lookaround, word boundaries and ^ $ inside the pattern throw vtllm::Error
// naming the construct and its offset.
Grammar regex_to_grammar(std::string_view pattern);

// The grammar whose language is exactly `choices` (at least one).
Grammar choice_to_grammar(std::span<const std::string> choices);

}  // namespace vtllm::structured
