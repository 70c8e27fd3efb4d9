// Typed access to tokenizer.json values with errors that name the JSON path.
//
// A malformed file (wrong type, missing field, number out of range) becomes a
// vtllm::Error such as "tokenizer.json: model.vocab["x"]: expected an integer
// id in [0, 16777216), got -3", never an nlohmann exception or a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace vtllm::text {

using Json = nlohmann::json;

// Where a value sits in the file, e.g. "tokenizer.json: pre_tokenizer.pretokenizers[1]".
class JsonPath {
 public:
  explicit JsonPath(std::string path) : path_(std::move(path)) {}
  JsonPath key(std::string_view k) const { return JsonPath(path_ + "." + std::string(k)); }
  JsonPath index(size_t i) const { return JsonPath(path_ + "[" + std::to_string(i) + "]"); }
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

// The member `key` of object `j`; throws when `j` is not an object or lacks it.
const Json& json_member(const Json& j, std::string_view key, const JsonPath& at);
// Like json_member but returns nullptr when absent or null.
const Json* json_optional(const Json& j, std::string_view key, const JsonPath& at);

std::string json_string(const Json& j, const JsonPath& at);
bool json_bool(const Json& j, const JsonPath& at);
// An integer in [lo, hi].
int64_t json_int(const Json& j, int64_t lo, int64_t hi, const JsonPath& at);
const Json& json_array(const Json& j, const JsonPath& at);
const Json& json_object(const Json& j, const JsonPath& at);

// Convenience: a member that must be a string / bool, or a default when absent or null.
std::string json_string_or(const Json& obj, std::string_view key, std::string fallback,
                           const JsonPath& at);
bool json_bool_or(const Json& obj, std::string_view key, bool fallback, const JsonPath& at);

// The "type" member of a component object.
std::string json_type(const Json& j, const JsonPath& at);

// Parses text as JSON; a syntax error names `what` and the byte offset.
Json json_parse(std::string_view text, std::string_view what);

}  // namespace vtllm::text
