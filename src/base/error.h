// vtllm::Error, the one exception type of the project, and the checks that throw it.
//
// Every layer throws vtllm::Error (or a subclass) with a message that names the
// thing and the problem. The C API catches at its boundary; nothing else does.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace vtllm {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Concatenates its arguments with operator<< (g++ 12 has no <format>).
template <class... Args>
std::string str_cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

namespace detail {
[[noreturn]] void check_failed(const char* cond, const char* file, int line, const std::string& msg);
}  // namespace detail

}  // namespace vtllm

// VT_CHECK(cond, parts...): throws vtllm::Error "parts... (cond failed at file:line)"
// when cond is false. The parts are only evaluated on failure.
#define VT_CHECK(cond, ...)                                                                 \
  do {                                                                                      \
    if (!(cond)) [[unlikely]]                                                               \
      ::vtllm::detail::check_failed(#cond, __FILE__, __LINE__, ::vtllm::str_cat(__VA_ARGS__)); \
  } while (0)

// VT_REQUIRE(cond, parts...): throws vtllm::Error "parts..." when cond is false, with no
// condition text or source location: for validating user input (flags, files, requests),
// where the message alone must say what is wrong.
#define VT_REQUIRE(cond, ...)                                   \
  do {                                                          \
    if (!(cond)) [[unlikely]]                                   \
      throw ::vtllm::Error(::vtllm::str_cat(__VA_ARGS__));      \
  } while (0)

// VT_THROW(parts...): throws vtllm::Error with the concatenated parts.
#define VT_THROW(...) throw ::vtllm::Error(::vtllm::str_cat(__VA_ARGS__))
