#include "text/json_access.h"

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace vtllm::text {

namespace {

const char* type_name(const Json& j) { return j.type_name(); }

}  // namespace

const Json& json_object(const Json& j, const JsonPath& at) {
  if (!j.is_object()) VT_THROW(at.str(), ": expected an object, got ", type_name(j));
  return j;
}

const Json& json_array(const Json& j, const JsonPath& at) {
  if (!j.is_array()) VT_THROW(at.str(), ": expected an array, got ", type_name(j));
  return j;
}

const Json& json_member(const Json& j, std::string_view key, const JsonPath& at) {
  json_object(j, at);
  auto it = j.find(key);
  if (it == j.end()) VT_THROW(at.str(), ": missing field '", key, "'");
  return *it;
}

const Json* json_optional(const Json& j, std::string_view key, const JsonPath& at) {
  json_object(j, at);
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string json_string(const Json& j, const JsonPath& at) {
  if (!j.is_string()) VT_THROW(at.str(), ": expected a string, got ", type_name(j));
  return j.get<std::string>();
}

bool json_bool(const Json& j, const JsonPath& at) {
  if (!j.is_boolean()) VT_THROW(at.str(), ": expected true or false, got ", type_name(j));
  return j.get<bool>();
}

int64_t json_int(const Json& j, int64_t lo, int64_t hi, const JsonPath& at) {
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(hi) || static_cast<int64_t>(v) < lo)
      VT_THROW(at.str(), ": ", v, " is out of range [", lo, ", ", hi, "]");
    return static_cast<int64_t>(v);
  }
  if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) VT_THROW(at.str(), ": ", v, " is out of range [", lo, ", ", hi, "]");
    return v;
  }
  VT_THROW(at.str(), ": expected an integer, got ", type_name(j));
}

std::string json_string_or(const Json& obj, std::string_view key, std::string fallback,
                           const JsonPath& at) {
  const Json* v = json_optional(obj, key, at);
  return v ? json_string(*v, at.key(key)) : std::move(fallback);
}

bool json_bool_or(const Json& obj, std::string_view key, bool fallback, const JsonPath& at) {
  const Json* v = json_optional(obj, key, at);
  return v ? json_bool(*v, at.key(key)) : fallback;
}

std::string json_type(const Json& j, const JsonPath& at) {
  return json_string(json_member(j, "type", at), at.key("type"));
}

Json json_parse(std::string_view text, std::string_view what) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    VT_THROW(what, ": not valid JSON: ", e.what());
  }
}

}  // namespace vtllm::text
