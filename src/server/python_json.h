// JSON text as Python's json.dumps(value, ensure_ascii=False) writes it: ", " between
// items, ": " after keys, keys in the object's order, non-ASCII text as is. vLLM
// writes tool-call arguments this way, and clients compare them byte for byte.
// Internal to src/server .cpp files (it brings in nlohmann/json).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace vtllm::server {

// Bytes that are not valid UTF-8 are written as U+FFFD.
std::string python_json_dumps(const nlohmann::ordered_json& v);

// The part of python_json_dumps(parse(text)) that `text`, the start of one JSON value's
// text, already settles: every continuation of it into a valid value (as nlohmann parses
// it) dumps to text that starts with `settled`. Strings grow by whole characters, numbers
// and literals appear once complete, separators once their character is read; nesting
// past 512 levels settles nothing deeper. Duplicate object keys are not recognized (the
// parse keeps one; the prefix shows both).
struct JsonDumpPrefix {
  std::string settled;
  bool complete = false;  // the value's text is whole; `end` is just past it
  bool invalid = false;   // no continuation of `text` is valid JSON
  size_t end = 0;
};
JsonDumpPrefix python_json_dumps_prefix(std::string_view text);

// The start of a hermes call body, {"name": NAME, "arguments": ARGS, ...}, as far as
// `text` shows it: `name` once its string is whole, `arguments` as python_json_dumps_prefix
// of ARGS once the key was read. Other keys' values are skipped.
struct HermesBodyPrefix {
  std::optional<std::string> name;
  std::optional<std::string> arguments;  // settled dump of ARGS so far
  bool invalid = false;                  // not the start of a JSON object of that shape
};
HermesBodyPrefix hermes_body_prefix(std::string_view text);

}  // namespace vtllm::server
