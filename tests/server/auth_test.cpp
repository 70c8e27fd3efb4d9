#include "server/auth.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "expect_api_error.h"

namespace vtllm::server {
namespace {

TEST(Auth, KeysEqualAgreesWithStringEqualityOnRandomKeys) {
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    // A small alphabet and short lengths make equal pairs and shared prefixes common.
    auto key = [&] {
      std::string s(rng() % 5, ' ');
      for (char& c : s) c = char('a' + rng() % 2);
      return s;
    };
    const std::string a = key(), b = key();
    EXPECT_EQ(keys_equal(a, b), a == b) << "'" << a << "' vs '" << b << "'";
  }
  EXPECT_FALSE(keys_equal(std::string("k\0", 2), "k"));
}

TEST(Auth, BearerKey) {
  EXPECT_NO_THROW(check_api_key("", ""));
  EXPECT_NO_THROW(check_api_key("Bearer anything", ""));
  EXPECT_NO_THROW(check_api_key("Bearer s3cret", "s3cret"));
  EXPECT_API_ERROR(check_api_key("", "s3cret"), 401, "", "invalid_api_key");
  EXPECT_API_ERROR(check_api_key("Bearer s3cre", "s3cret"), 401, "", "invalid_api_key");
  EXPECT_API_ERROR(check_api_key("Bearer s3cret2", "s3cret"), 401, "", "invalid_api_key");
  EXPECT_API_ERROR(check_api_key("Basic s3cret", "s3cret"), 401, "", "invalid_api_key");
  EXPECT_API_ERROR(check_api_key("s3cret", "s3cret"), 401, "", "invalid_api_key");
}

TEST(Auth, OnlyV1PathsNeedTheKey) {
  EXPECT_TRUE(path_needs_key("/v1/models"));
  EXPECT_TRUE(path_needs_key("/v1/chat/completions"));
  EXPECT_FALSE(path_needs_key("/health"));
  EXPECT_FALSE(path_needs_key("/metrics"));
  EXPECT_FALSE(path_needs_key("/v10"));
}

TEST(Auth, BodySizeLimit) {
  EXPECT_NO_THROW(check_body_size(100, 100));
  EXPECT_API_ERROR(check_body_size(101, 100), 413, "", "request_too_large");
}

}  // namespace
}  // namespace vtllm::server
