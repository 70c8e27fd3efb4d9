// Request bodies as JSON (internal to src/server .cpp files: it brings in
// nlohmann/json, which public headers keep out). Typed field reads are
// base/json.h's JsonFields; this adds what is HTTP-specific: the body check and
// the 400 a JsonError becomes.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/json.h"
#include "server/api_error.h"

namespace vtllm::server {

// Parses a request body: valid UTF-8 holding one JSON object; ApiError 400 otherwise.
nlohmann::json parse_json_object(std::string_view body);

// The OpenAI error for a bad field: 400 whose `param` is the field's path
// ("max_tokens", "messages[0].content") and whose `code` says what was wrong
// (invalid_type, missing_field, invalid_value, invalid_json).
ApiError to_api_error(const JsonError& e);

}  // namespace vtllm::server
