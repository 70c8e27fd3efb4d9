// The {"String": s} / {"Regex": r} pattern object that Split, Replace
// (normalizer and decoder) share in tokenizer.json.
#pragma once

#include "base/json.h"
#include "text/regex.h"

namespace vtllm::text {

// A String pattern matches literally; a Regex pattern is Oniguruma syntax. An
// empty String pattern is refused (HF would match nothing or everything).
Regex make_pattern(const Json& j, const JsonPath& at);

}  // namespace vtllm::text
