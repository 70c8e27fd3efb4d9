// Test helper: EXPECT_ERROR_WITH(stmt, "part", ...) passes when stmt throws a
// vtllm::Error whose message contains every part.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "base/error.h"

namespace vtllm::io::testing {

template <class F>
::testing::AssertionResult throws_error_with(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const vtllm::Error& e) {
    const std::string what = e.what();
    for (const std::string& p : parts)
      if (what.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks '" << p << "': " << what;
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-vtllm exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace vtllm::io::testing

#define EXPECT_ERROR_WITH(stmt, ...) \
  EXPECT_TRUE(::vtllm::io::testing::throws_error_with([&] { (void)(stmt); }, {__VA_ARGS__}))
