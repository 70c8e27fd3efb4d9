#include "engine/request.h"

#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"

namespace vtllm::engine {
namespace {

// Expects validate() to throw and its message to name `field`.
void expect_bad(const std::function<void(SamplingParams&)>& edit, const std::string& field) {
  SamplingParams p;
  edit(p);
  try {
    p.validate(100);
    FAIL() << "validate accepted a bad " << field;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(SamplingParams, DefaultsAreValid) { EXPECT_NO_THROW(SamplingParams{}.validate(10)); }

TEST(SamplingParams, ValidationNamesTheBadField) {
  expect_bad([](auto& p) { p.n = 0; }, "n = 0");
  expect_bad([](auto& p) { p.temperature = -0.5f; }, "temperature");
  expect_bad([](auto& p) { p.top_p = 0.0f; }, "top_p");
  expect_bad([](auto& p) { p.top_p = 1.5f; }, "top_p");
  expect_bad([](auto& p) { p.top_k = -2; }, "top_k");
  expect_bad([](auto& p) { p.min_p = 1.1f; }, "min_p");
  expect_bad([](auto& p) { p.repetition_penalty = 0.0f; }, "repetition_penalty");
  expect_bad([](auto& p) { p.frequency_penalty = 2.5f; }, "frequency_penalty");
  expect_bad([](auto& p) { p.presence_penalty = -3.0f; }, "presence_penalty");
  expect_bad([](auto& p) { p.max_tokens = 0; }, "max_tokens");
  expect_bad([](auto& p) { p.min_tokens = 20; }, "min_tokens");
  expect_bad([](auto& p) { p.logprobs = -1; }, "logprobs");
  expect_bad([](auto& p) { p.logit_bias = {{100, 1.0f}}; }, "logit_bias");
  expect_bad([](auto& p) { p.stop_token_ids = {-1}; }, "stop_token_ids");
  expect_bad([](auto& p) { p.stop = {""}; }, "stop");
  expect_bad([](auto& p) { p.temperature = std::numeric_limits<float>::quiet_NaN(); },
             "temperature");
}

TEST(SamplingParams, GreedyBelowEpsilon) {
  SamplingParams p;
  p.temperature = 0.0f;
  EXPECT_TRUE(p.greedy());
  p.temperature = 0.01f;
  EXPECT_FALSE(p.greedy());
}

TEST(Request, AppendKeepsAllTokensInStep) {
  Request r("a", {5, 6, 7}, {});
  r.append_output(9);
  r.append_output(1);
  EXPECT_EQ(r.all_token_ids, (std::vector<int32_t>{5, 6, 7, 9, 1}));
  EXPECT_EQ(r.num_tokens(), 5);
  EXPECT_EQ(r.num_output_tokens(), 2);
  EXPECT_EQ(r.num_prompt_tokens(), 3);
}

TEST(Request, EmptyPromptIsRejectedByName) {
  try {
    Request r("req-7", {}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("req-7"), std::string::npos);
  }
}

TEST(Request, FinishedStatusesMapToReasons) {
  EXPECT_EQ(finish_reason_of(RequestStatus::kFinishedStopped), FinishReason::kStop);
  EXPECT_EQ(finish_reason_of(RequestStatus::kFinishedLength), FinishReason::kLength);
  EXPECT_EQ(finish_reason_of(RequestStatus::kFinishedAborted), FinishReason::kAbort);
  EXPECT_EQ(finish_reason_of(RequestStatus::kPreempted), FinishReason::kNone);
  EXPECT_FALSE(is_finished(RequestStatus::kPreempted));
  EXPECT_TRUE(is_finished(RequestStatus::kFinishedAborted));
}

}  // namespace
}  // namespace vtllm::engine
