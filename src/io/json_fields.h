// Internal to src/io: typed, error-naming reads of JSON object fields.
//
// Only io .cpp files include this (it pulls in nlohmann/json, which is heavy to
// compile); public headers stay JSON-free. A field that is absent or null takes the
// caller's default; a field of the wrong type is a vtllm::Error naming the file and
// the dotted field path ("config.json: text_config.hidden_size: expected an
// integer, got \"abc\"").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace vtllm::io::detail {

using nlohmann::json;

// Parses `text` as JSON; a syntax error names `file_name`.
json parse_json(const std::string& text, const std::string& file_name);

class Fields {
 public:
  // `obj` must outlive this view. `prefix` is the dotted path of `obj` ("" at the root).
  Fields(const json& obj, std::string file, std::string prefix);

  bool has(const char* key) const;  // present and not null
  const json* raw(const char* key) const;  // nullptr when absent or null
  std::string path(const char* key) const;  // "text_config.hidden_size"
  [[noreturn]] void fail(const char* key, const std::string& problem) const;

  std::optional<int64_t> opt_int(const char* key) const;
  std::optional<double> opt_double(const char* key) const;
  std::optional<bool> opt_bool(const char* key) const;
  std::optional<std::string> opt_string(const char* key) const;
  // An integer or a list of integers (eos_token_id); empty when absent.
  std::vector<int64_t> int_or_list(const char* key) const;
  std::optional<std::vector<int64_t>> opt_int_list(const char* key) const;
  std::optional<std::vector<std::string>> opt_string_list(const char* key) const;

  int64_t get_int(const char* key, int64_t fallback) const { return opt_int(key).value_or(fallback); }
  double get_double(const char* key, double fallback) const { return opt_double(key).value_or(fallback); }
  bool get_bool(const char* key, bool fallback) const { return opt_bool(key).value_or(fallback); }
  std::string get_string(const char* key, const std::string& fallback) const {
    return opt_string(key).value_or(fallback);
  }
  int64_t require_int(const char* key) const;

  // A nested object's view; nullopt when absent or null; an error when not an object.
  std::optional<Fields> child(const char* key) const;
  const std::string& file() const { return file_; }
  const std::string& prefix() const { return prefix_; }

 private:
  const json* obj_;
  std::string file_;
  std::string prefix_;
};

}  // namespace vtllm::io::detail
