#include "text/pattern.h"

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace vtllm::text {

Regex make_pattern(const Json& j, const JsonPath& at) {
  json_object(j, at);
  if (const Json* s = json_optional(j, "String", at)) {
    const std::string lit = json_string(*s, at.key("String"));
    if (lit.empty()) VT_THROW(at.str(), ": empty String pattern is not supported");
    return Regex(lit, Regex::Syntax::kLiteral, at.str());
  }
  if (const Json* r = json_optional(j, "Regex", at)) {
    return Regex(json_string(*r, at.key("Regex")), Regex::Syntax::kOniguruma, at.str());
  }
  VT_THROW(at.str(), ": expected a pattern {\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace vtllm::text
