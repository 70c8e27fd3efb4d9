#include "io/json_fields.h"

#include <cmath>
#include <cstdint>

#include "base/error.h"

namespace vtllm::io::detail {

namespace {
std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}
}  // namespace

json parse_json(const std::string& text, const std::string& file_name) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    VT_THROW(file_name, ": malformed JSON: ", e.what());
  }
}

Fields::Fields(const json& obj, std::string file, std::string prefix)
    : obj_(&obj), file_(std::move(file)), prefix_(std::move(prefix)) {
  if (!obj.is_object()) VT_THROW(file_, ": ", prefix_.empty() ? "top level" : prefix_, " is not a JSON object");
}

const json* Fields::raw(const char* key) const {
  auto it = obj_->find(key);
  if (it == obj_->end() || it->is_null()) return nullptr;
  return &*it;
}

bool Fields::has(const char* key) const { return raw(key) != nullptr; }

std::string Fields::path(const char* key) const { return prefix_.empty() ? key : prefix_ + "." + key; }

void Fields::fail(const char* key, const std::string& problem) const {
  VT_THROW(file_, ": ", path(key), ": ", problem);
}

std::optional<int64_t> Fields::opt_int(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() <= uint64_t(INT64_MAX)) return int64_t(v->get<uint64_t>());
  } else if (v->is_number_integer()) {
    return v->get<int64_t>();
  }
  // JSON writers sometimes spell integers as 4096.0; accept exact integral floats.
  // The range test comes first: converting an out-of-range double is undefined.
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (d > -9e18 && d < 9e18 && d == std::trunc(d)) return int64_t(d);
  }
  fail(key, "expected an integer, got " + shown(*v));
}

std::optional<double> Fields::opt_double(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(key, "expected a number, got " + shown(*v));
  return v->get<double>();
}

std::optional<bool> Fields::opt_bool(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(key, "expected true or false, got " + shown(*v));
  return v->get<bool>();
}

std::optional<std::string> Fields::opt_string(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(key, "expected a string, got " + shown(*v));
  return v->get<std::string>();
}

std::optional<std::vector<int64_t>> Fields::opt_int_list(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_array()) fail(key, "expected a list of integers, got " + shown(*v));
  std::vector<int64_t> out;
  for (const json& x : *v) {
    if (!x.is_number_integer()) fail(key, "expected a list of integers, found " + shown(x));
    out.push_back(x.get<int64_t>());
  }
  return out;
}

std::vector<int64_t> Fields::int_or_list(const char* key) const {
  const json* v = raw(key);
  if (!v) return {};
  if (v->is_number_integer()) return {v->get<int64_t>()};
  return *opt_int_list(key);
}

std::optional<std::vector<std::string>> Fields::opt_string_list(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_array()) fail(key, "expected a list of strings, got " + shown(*v));
  std::vector<std::string> out;
  for (const json& x : *v) {
    if (!x.is_string()) fail(key, "expected a list of strings, found " + shown(x));
    out.push_back(x.get<std::string>());
  }
  return out;
}

int64_t Fields::require_int(const char* key) const {
  auto v = opt_int(key);
  if (!v) fail(key, "required field is missing");
  return *v;
}

std::optional<Fields> Fields::child(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_object()) fail(key, "expected a JSON object, got " + shown(*v));
  return Fields(*v, file_, path(key));
}

}  // namespace vtllm::io::detail
