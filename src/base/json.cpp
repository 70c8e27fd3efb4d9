#include "base/json.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace vtllm {

namespace {

std::string where_and(const JsonPath& at, const std::string& problem) {
  const std::string where = at.str();
  return where.empty() ? problem : where + ": " + problem;
}

[[noreturn]] void type_error(const Json& j, const char* expected, const JsonPath& at) {
  throw JsonError(JsonError::Kind::kType, at,
                  str_cat("expected ", expected, ", got ", json_shown(j)));
}

}  // namespace

JsonPath JsonPath::key(std::string_view k) const {
  return JsonPath(origin_, path_.empty() ? std::string(k) : str_cat(path_, ".", k));
}

JsonPath JsonPath::index(size_t i) const { return JsonPath(origin_, str_cat(path_, "[", i, "]")); }

std::string JsonPath::str() const {
  if (origin_.empty()) return path_;
  if (path_.empty()) return origin_;
  return origin_ + ": " + path_;
}

JsonError::JsonError(Kind kind, JsonPath at, const std::string& problem)
    : Error(where_and(at, problem)), kind_(kind), at_(std::move(at)), problem_(problem) {}

Json json_parse(std::string_view text, std::string_view origin) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw JsonError(JsonError::Kind::kSyntax, JsonPath(std::string(origin)),
                    str_cat("malformed JSON: ", e.what()));
  }
}

const char* json_type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    case Json::value_t::string:
      return "string";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    default:
      return "unknown";
  }
}

std::string json_shown(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

const Json& json_object(const Json& j, const JsonPath& at) {
  if (!j.is_object()) type_error(j, "a JSON object", at);
  return j;
}

const Json& json_array(const Json& j, const JsonPath& at) {
  if (!j.is_array()) type_error(j, "an array", at);
  return j;
}

std::string json_string(const Json& j, const JsonPath& at) {
  if (!j.is_string()) type_error(j, "a string", at);
  return j.get<std::string>();
}

bool json_bool(const Json& j, const JsonPath& at) {
  if (!j.is_boolean()) type_error(j, "true or false", at);
  return j.get<bool>();
}

double json_number(const Json& j, const JsonPath& at) {
  if (!j.is_number()) type_error(j, "a number", at);
  return j.get<double>();
}

int64_t json_int(const Json& j, int64_t lo, int64_t hi, const JsonPath& at) {
  auto out_of_range = [&](const auto& v) {
    throw JsonError(JsonError::Kind::kValue, at,
                    str_cat(v, " is out of range [", lo, ", ", hi, "]"));
  };
  int64_t v = 0;
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
      throw JsonError(JsonError::Kind::kValue, at,
                      str_cat("expected an integer that fits in 64 bits, got ", u));
    v = int64_t(u);
  } else if (j.is_number_integer()) {
    v = j.get<int64_t>();
  } else if (j.is_number_float()) {
    // The range test comes first: converting an out-of-range double is undefined.
    const double d = j.get<double>();
    if (!(d > -9e18 && d < 9e18) || d != std::trunc(d)) type_error(j, "an integer", at);
    v = int64_t(d);
  } else {
    type_error(j, "an integer", at);
  }
  if (v < lo || v > hi) out_of_range(v);
  return v;
}

const Json& json_member(const Json& j, std::string_view key, const JsonPath& at) {
  json_object(j, at);
  auto it = j.find(key);
  if (it == j.end())
    throw JsonError(JsonError::Kind::kMissing, at, str_cat("missing field '", key, "'"));
  return *it;
}

const Json* json_optional(const Json& j, std::string_view key, const JsonPath& at) {
  json_object(j, at);
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
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

JsonFields::JsonFields(const Json& obj, JsonPath at) : obj_(&obj), at_(std::move(at)) {
  if (!obj.is_object()) {
    if (at_.path().empty())
      throw JsonError(JsonError::Kind::kType, at_,
                      "the top level is not a JSON object, got " + json_shown(obj));
    json_object(obj, at_);
  }
}

const Json* JsonFields::raw(std::string_view key) const {
  auto it = obj_->find(key);
  if (it == obj_->end() || it->is_null()) return nullptr;
  return &*it;
}

void JsonFields::fail(std::string_view key, const std::string& problem) const {
  throw JsonError(JsonError::Kind::kValue, at(key), problem);
}

std::optional<int64_t> JsonFields::opt_int(std::string_view key, int64_t lo, int64_t hi) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  return json_int(*v, lo, hi, at(key));
}

std::optional<double> JsonFields::opt_double(std::string_view key) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  return json_number(*v, at(key));
}

std::optional<bool> JsonFields::opt_bool(std::string_view key) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  return json_bool(*v, at(key));
}

std::optional<std::string> JsonFields::opt_string(std::string_view key) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  return json_string(*v, at(key));
}

std::optional<std::vector<int64_t>> JsonFields::opt_int_list(std::string_view key) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_array()) type_error(*v, "a list of integers", at(key));
  std::vector<int64_t> out;
  for (size_t i = 0; i < v->size(); ++i)
    out.push_back(json_int((*v)[i], std::numeric_limits<int64_t>::min(),
                           std::numeric_limits<int64_t>::max(), at(key).index(i)));
  return out;
}

std::vector<int64_t> JsonFields::int_or_list(std::string_view key) const {
  const Json* v = raw(key);
  if (!v) return {};
  if (!v->is_array()) return {*opt_int(key)};
  return *opt_int_list(key);
}

std::optional<std::vector<std::string>> JsonFields::opt_string_list(std::string_view key) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_array()) type_error(*v, "a list of strings", at(key));
  std::vector<std::string> out;
  for (size_t i = 0; i < v->size(); ++i) out.push_back(json_string((*v)[i], at(key).index(i)));
  return out;
}

int64_t JsonFields::require_int(std::string_view key) const {
  auto v = opt_int(key);
  if (!v) throw JsonError(JsonError::Kind::kMissing, at(key), "required field is missing");
  return *v;
}

std::optional<JsonFields> JsonFields::child(std::string_view key) const {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  json_object(*v, at(key));
  return JsonFields(*v, at(key));
}

}  // namespace vtllm
