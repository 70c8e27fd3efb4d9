#include "base/error.h"

#include <cstring>

namespace vtllm::detail {

void check_failed(const char* cond, const char* file, int line, const std::string& msg) {
  const char* base = std::strrchr(file, '/');
  throw Error(str_cat(msg.empty() ? std::string("check failed") : msg, " (", cond, " at ",
                      base ? base + 1 : file, ":", line, ")"));
}

}  // namespace vtllm::detail
