// Typed access to the fields of a JSON request body (internal to src/server .cpp
// files: it brings in nlohmann/json, which public headers keep out).
//
// Every getter returns std::nullopt for an absent or null field and throws
// ApiError 400 naming the field when it is present with the wrong type or value.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/api_error.h"

namespace vtllm::server {

// Parses a request body: valid UTF-8 holding one JSON object.
nlohmann::json parse_json_object(std::string_view body);

class JsonFields {
 public:
  explicit JsonFields(const nlohmann::json& object) : object_(object) {}

  // The field, or null when absent.
  const nlohmann::json* find(const char* name) const;
  std::optional<bool> get_bool(const char* name) const;
  // Integers; a float with no fractional part counts (pydantic's lax mode does too).
  std::optional<int64_t> get_int(const char* name, int64_t lo, int64_t hi) const;
  std::optional<double> get_number(const char* name) const;
  std::optional<std::string> get_string(const char* name) const;

 private:
  const nlohmann::json& object_;
};

// Converts one JSON value to an integer in [lo, hi] (`param` names it in errors).
int64_t json_to_int(const nlohmann::json& v, const std::string& param, int64_t lo, int64_t hi);
// The JSON type of v for messages ("string", "array", ...).
const char* json_type_name(const nlohmann::json& v);

}  // namespace vtllm::server
