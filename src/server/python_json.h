// JSON text as Python's json.dumps(value, ensure_ascii=False) writes it: ", " between
// items, ": " after keys, keys in the object's order, non-ASCII text as is. vLLM
// writes tool-call arguments this way, and clients compare them byte for byte.
// Internal to src/server .cpp files (it brings in nlohmann/json).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vtllm::server {

// Bytes that are not valid UTF-8 are written as U+FFFD.
std::string python_json_dumps(const nlohmann::ordered_json& v);

}  // namespace vtllm::server
