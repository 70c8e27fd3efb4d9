#include "base/error.h"

#include <gtest/gtest.h>

namespace vtllm {
namespace {

TEST(Error, CheckNamesMessageConditionAndPlace) {
  int n = 3;
  try {
    VT_CHECK(n == 4, "tensor 'x' has ", n, " dims, expected 4");
    FAIL() << "VT_CHECK did not throw";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("tensor 'x' has 3 dims, expected 4"), std::string::npos) << what;
    EXPECT_NE(what.find("n == 4"), std::string::npos) << what;
    EXPECT_NE(what.find("error_test.cpp:"), std::string::npos) << what;
  }
}

TEST(Error, CheckPassesWithoutEvaluatingMessage) {
  int evaluated = 0;
  auto side_effect = [&] { return ++evaluated; };
  VT_CHECK(true, side_effect());
  EXPECT_EQ(evaluated, 0);
}

TEST(Error, ThrowConcatenatesParts) {
  EXPECT_THROW(VT_THROW("a", 1, 'b'), Error);
  try {
    VT_THROW("a", 1, 'b');
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "a1b");
  }
}

}  // namespace
}  // namespace vtllm
