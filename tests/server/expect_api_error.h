// EXPECT_API_ERROR(stmt, status, param, code): stmt throws server::ApiError with
// that HTTP status, param and code.
#pragma once

#include <gtest/gtest.h>

#include "server/api_error.h"

#define EXPECT_API_ERROR(stmt, status_, param_, code_) \
  do {                                                 \
    try {                                              \
      stmt;                                            \
      ADD_FAILURE() << #stmt << " did not throw";      \
    } catch (const ::vtllm::server::ApiError& e) {     \
      EXPECT_EQ(e.status(), status_) << e.what();      \
      EXPECT_EQ(e.param(), param_) << e.what();        \
      EXPECT_EQ(e.code(), code_) << e.what();          \
    }                                                  \
  } while (0)
