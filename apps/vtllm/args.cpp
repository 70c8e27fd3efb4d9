#include "args.h"

#include <algorithm>
#include <cstdlib>

#include "base/error.h"

namespace vtllm::cli {

namespace {
bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

Args::Args(int argc, char** argv, std::vector<std::string> value_flags,
           std::vector<std::string> bool_flags) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (contains(bool_flags, name)) {
      VT_REQUIRE(!inline_value, "--", name, " takes no value");
      values_[name] = "1";
    } else if (contains(value_flags, name)) {
      if (inline_value) {
        values_[name] = *inline_value;
      } else {
        VT_REQUIRE(i + 1 < argc, "--", name, " needs a value");
        values_[name] = argv[++i];
      }
    } else {
      VT_THROW("unknown option --", name);
    }
  }
}

bool Args::has(const std::string& flag) const { return values_.count(flag) != 0; }

std::optional<std::string> Args::get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::get_or(const std::string& flag, const std::string& fallback) const {
  return get(flag).value_or(fallback);
}

int64_t Args::get_int(const std::string& flag, int64_t fallback) const {
  auto v = get(flag);
  if (!v) return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v->c_str(), &end, 10);
  VT_REQUIRE(!v->empty() && end && *end == '\0', "--", flag, " expects an integer, got '", *v, "'");
  return x;
}

double Args::get_double(const std::string& flag, double fallback) const {
  auto v = get(flag);
  if (!v) return fallback;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  VT_REQUIRE(!v->empty() && end && *end == '\0', "--", flag, " expects a number, got '", *v, "'");
  return x;
}

}  // namespace vtllm::cli
