#include "server/json_body.h"

#include <cmath>

#include "text/utf8.h"

namespace vtllm::server {

using nlohmann::json;

json parse_json_object(std::string_view body) {
  if (!text::is_valid_utf8(body)) {
    throw ApiError::bad_request("", "request body is not valid UTF-8", "invalid_utf8");
  }
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    throw ApiError::bad_request("", "request body is not valid JSON", "invalid_json");
  }
  if (!j.is_object()) {
    throw ApiError::bad_request(
        "", str_cat("request body must be a JSON object, got ", json_type_name(j)), "invalid_json");
  }
  return j;
}

const char* json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    default:
      return "unknown";
  }
}

int64_t json_to_int(const json& v, const std::string& param, int64_t lo, int64_t hi) {
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(hi)) {
      throw ApiError::bad_request(param, str_cat("'", param, "' = ", u, " is above ", hi));
    }
    x = int64_t(u);
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    // 9.2e18 bounds the cast; any range a field allows is far inside it.
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.2e18) {
      throw ApiError::bad_request(param, str_cat("'", param, "' must be an integer, got ", d),
                                  "invalid_type");
    }
    x = int64_t(d);
  } else {
    throw ApiError::bad_request(
        param, str_cat("'", param, "' must be an integer, got ", json_type_name(v)),
        "invalid_type");
  }
  if (x < lo || x > hi) {
    throw ApiError::bad_request(
        param, str_cat("'", param, "' = ", x, " is out of range [", lo, ", ", hi, "]"));
  }
  return x;
}

const json* JsonFields::find(const char* name) const {
  auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<bool> JsonFields::get_bool(const char* name) const {
  const json* v = find(name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    throw ApiError::bad_request(
        name, str_cat("'", name, "' must be a boolean, got ", json_type_name(*v)), "invalid_type");
  }
  return v->get<bool>();
}

std::optional<int64_t> JsonFields::get_int(const char* name, int64_t lo, int64_t hi) const {
  const json* v = find(name);
  if (!v) return std::nullopt;
  return json_to_int(*v, name, lo, hi);
}

std::optional<double> JsonFields::get_number(const char* name) const {
  const json* v = find(name);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    throw ApiError::bad_request(
        name, str_cat("'", name, "' must be a number, got ", json_type_name(*v)), "invalid_type");
  }
  return v->get<double>();
}

std::optional<std::string> JsonFields::get_string(const char* name) const {
  const json* v = find(name);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    throw ApiError::bad_request(
        name, str_cat("'", name, "' must be a string, got ", json_type_name(*v)), "invalid_type");
  }
  return v->get<std::string>();
}

}  // namespace vtllm::server
