// JSON in and out of jinja::Value: Python's json.loads for the render context
// (objects keep their key order) and json.dumps as transformers' tojson filter
// calls it (ensure_ascii=False unless asked, indent and separators as Python).
#pragma once

#include <string>
#include <string_view>

#include "text/jinja/value.h"

namespace vtllm::jinja {

struct JsonOptions {
  bool ensure_ascii = false;
  bool has_indent = false;
  std::string indent;  // the string repeated per level ("    " for indent=4)
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// Python's json.dumps. Throws TemplateError(Runtime) for values JSON cannot hold
// (undefined, callables, namespaces), as json.dumps raises TypeError.
std::string json_dumps(const Value& v, const JsonOptions& options);

// Python's json.loads: integers stay ints, other numbers are floats. Throws
// TemplateError(Runtime) naming the offset of malformed JSON or nesting deeper
// than kMaxNesting.
Value json_loads(std::string_view text);

}  // namespace vtllm::jinja
