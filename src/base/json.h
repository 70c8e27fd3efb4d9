// Typed reads of JSON values with errors that name where the value sits: the
// one implementation behind config.json (io), tokenizer.json and
// tokenizer_config.json (text) and HTTP request bodies (server).
//
// A value of the wrong type, out of range, or missing becomes a JsonError such
// as "config.json: text_config.hidden_size: expected an integer, got \"abc\"",
// never an nlohmann exception or a crash. Integers are accepted as JSON
// integers or as floats with no fractional part (4096.0: some writers emit
// them; pydantic's lax mode accepts them too).
//
// This header only forward-declares nlohmann::json; a .cpp that reads values
// itself includes <nlohmann/json.hpp>.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace vtllm {

using Json = nlohmann::json;

// Where a value sits: the file (or other origin) and the dotted path inside it,
// e.g. origin "tokenizer.json", path "pre_tokenizer.pretokenizers[1]".
class JsonPath {
 public:
  explicit JsonPath(std::string origin = "", std::string path = "")
      : origin_(std::move(origin)), path_(std::move(path)) {}
  JsonPath key(std::string_view k) const;
  JsonPath index(size_t i) const;
  const std::string& origin() const { return origin_; }
  const std::string& path() const { return path_; }
  // "origin: path", or whichever of the two is not empty.
  std::string str() const;

 private:
  std::string origin_;
  std::string path_;
};

// A JSON value that is not what its reader needs. what() is "<where>: <problem>".
class JsonError : public Error {
 public:
  enum class Kind {
    kSyntax,   // the text is not JSON
    kMissing,  // a required member is absent
    kType,     // the value has the wrong JSON type (or is a non-integral number)
    kValue,    // right type, unusable value (out of range, not allowed)
  };
  JsonError(Kind kind, JsonPath at, const std::string& problem);

  Kind kind() const { return kind_; }
  const JsonPath& at() const { return at_; }
  const std::string& problem() const { return problem_; }

 private:
  Kind kind_;
  JsonPath at_;
  std::string problem_;
};

// Parses `text`; a syntax error is a JsonError (kSyntax) naming `origin`.
Json json_parse(std::string_view text, std::string_view origin);

// The JSON type of `v` as messages name it: "null", "object", "array",
// "string", "boolean", "integer" or "number".
const char* json_type_name(const Json& v);
// `v` as a message shows it: its JSON text, cut to about 60 bytes.
std::string json_shown(const Json& v);

// Each returns `j` (or its value) when it has the type, else throws JsonError
// (kType) naming `at`.
const Json& json_object(const Json& j, const JsonPath& at);
const Json& json_array(const Json& j, const JsonPath& at);
std::string json_string(const Json& j, const JsonPath& at);
bool json_bool(const Json& j, const JsonPath& at);
double json_number(const Json& j, const JsonPath& at);
// An integer in [lo, hi]; kValue when out of range.
int64_t json_int(const Json& j, int64_t lo, int64_t hi, const JsonPath& at);

// The member `key` of object `j` (`at` names `j`); kMissing when absent.
const Json& json_member(const Json& j, std::string_view key, const JsonPath& at);
// The member `key` of object `j`, or nullptr when absent or null.
const Json* json_optional(const Json& j, std::string_view key, const JsonPath& at);
// A member that must be a string / bool, or `fallback` when absent or null.
std::string json_string_or(const Json& obj, std::string_view key, std::string fallback,
                           const JsonPath& at);
bool json_bool_or(const Json& obj, std::string_view key, bool fallback, const JsonPath& at);
// The "type" member (a string) of a component object.
std::string json_type(const Json& j, const JsonPath& at);

// A view of one JSON object with typed, optional member reads. Every opt_*
// returns nullopt for an absent or null member and throws JsonError naming
// the member's path for one of the wrong type or out of range. The object
// must outlive the view.
class JsonFields {
 public:
  // Throws JsonError (kType) when `obj` is not an object.
  JsonFields(const Json& obj, JsonPath at);
  // An object with no origin at the root (an HTTP request body).
  explicit JsonFields(const Json& obj) : JsonFields(obj, JsonPath()) {}
  // `file` names the origin, `prefix` the dotted path of `obj` ("" at the root).
  JsonFields(const Json& obj, std::string file, std::string prefix)
      : JsonFields(obj, JsonPath(std::move(file), std::move(prefix))) {}

  const Json* raw(std::string_view key) const;  // nullptr when absent or null
  const Json* find(std::string_view key) const { return raw(key); }
  bool has(std::string_view key) const { return raw(key) != nullptr; }
  JsonPath at(std::string_view key) const { return at_.key(key); }
  std::string path(std::string_view key) const { return at(key).path(); }  // "text_config.x"
  // Throws JsonError (kValue) "<origin>: <path.key>: <problem>".
  [[noreturn]] void fail(std::string_view key, const std::string& problem) const;

  std::optional<int64_t> opt_int(std::string_view key,
                                 int64_t lo = std::numeric_limits<int64_t>::min(),
                                 int64_t hi = std::numeric_limits<int64_t>::max()) const;
  std::optional<double> opt_double(std::string_view key) const;
  std::optional<bool> opt_bool(std::string_view key) const;
  std::optional<std::string> opt_string(std::string_view key) const;
  std::optional<std::vector<int64_t>> opt_int_list(std::string_view key) const;
  std::optional<std::vector<std::string>> opt_string_list(std::string_view key) const;
  // An integer or a list of integers (eos_token_id); empty when absent.
  std::vector<int64_t> int_or_list(std::string_view key) const;

  int64_t get_int(std::string_view key, int64_t fallback) const {
    return opt_int(key).value_or(fallback);
  }
  double get_double(std::string_view key, double fallback) const {
    return opt_double(key).value_or(fallback);
  }
  bool get_bool(std::string_view key, bool fallback) const {
    return opt_bool(key).value_or(fallback);
  }
  std::string get_string(std::string_view key, const std::string& fallback) const {
    return opt_string(key).value_or(fallback);
  }
  // kMissing when absent or null.
  int64_t require_int(std::string_view key) const;

  // A nested object's view; nullopt when absent or null; kType when not an object.
  std::optional<JsonFields> child(std::string_view key) const;
  const JsonPath& where() const { return at_; }
  const std::string& file() const { return at_.origin(); }
  const std::string& prefix() const { return at_.path(); }

 private:
  const Json* obj_;
  JsonPath at_;
};

}  // namespace vtllm
