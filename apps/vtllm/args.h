// A small command-line parser shared by the vtllm subcommands.
//
// Flags are --name VALUE, --name=VALUE or boolean --name; everything else is a
// positional argument. A subcommand declares what it accepts, so an unknown or
// malformed flag is an error naming it (vtllm::Error), never silently ignored.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vtllm::cli {

class Args {
 public:
  // `value_flags` take a value; `bool_flags` take none.
  Args(int argc, char** argv, std::vector<std::string> value_flags,
       std::vector<std::string> bool_flags);

  bool has(const std::string& flag) const;
  std::optional<std::string> get(const std::string& flag) const;
  std::string get_or(const std::string& flag, const std::string& fallback) const;
  int64_t get_int(const std::string& flag, int64_t fallback) const;
  double get_double(const std::string& flag, double fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace vtllm::cli
