#include "server/response.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace vtllm::server {
namespace {

using nlohmann::json;

const ResponseHeader kHead{"cmpl-abc", 1700000000, "tiny"};

Choice choice_with_logprobs() {
  Choice c;
  c.index = 2;
  c.text = "hi there";
  c.finish_reason = "length";
  c.has_logprobs = true;
  c.text_offset = 5;
  c.logprobs = {{"hi", -0.5f, {{"hi", -0.5f}, {"yo", -1.25f}}},
                {" there", -std::numeric_limits<float>::infinity(), {}}};
  return c;
}

TEST(Response, CompletionCarriesChoicesUsageAndLegacyLogprobs) {
  const json j = json::parse(completion_response(kHead, {choice_with_logprobs()}, {7, 2, 0}));
  EXPECT_EQ(j["id"], "cmpl-abc");
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "tiny");
  const json& c = j["choices"][0];
  EXPECT_EQ(c["index"], 2);
  EXPECT_EQ(c["text"], "hi there");
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_TRUE(c["stop_reason"].is_null());
  EXPECT_EQ(c["logprobs"]["tokens"], json({"hi", " there"}));
  EXPECT_EQ(c["logprobs"]["token_logprobs"][0], -0.5);
  EXPECT_EQ(c["logprobs"]["token_logprobs"][1], -9999.0);  // -inf is not JSON
  EXPECT_EQ(c["logprobs"]["top_logprobs"][0], json({{"hi", -0.5}, {"yo", -1.25}}));
  // The sampled token joins its own top map.
  EXPECT_EQ(c["logprobs"]["top_logprobs"][1], json({{" there", -9999.0}}));
  // Offsets continue from text_offset: 5, then 5 + len("hi").
  EXPECT_EQ(c["logprobs"]["text_offset"], json({5, 7}));
  EXPECT_EQ(j["usage"], json({{"prompt_tokens", 7},
                              {"completion_tokens", 2},
                              {"total_tokens", 9},
                              {"prompt_tokens_details", {{"cached_tokens", 0}}}}));
}

// vLLM's prompt_logprobs: null first, then {"<id>": {logprob, rank, decoded_token}} in
// the order given (the prompt token first), a repeated id once, -inf as -9999; echoed
// prompt tokens without a logprob are null in token_logprobs and top_logprobs.
TEST(Response, PromptLogprobsAndEchoedTokens) {
  Choice c;
  c.has_logprobs = true;
  c.logprobs = {{"A", 0, {}, true}, {"b", -0.75f, {{"c", -0.5f}}}};
  c.prompt_logprobs = std::vector<PromptPositionLogprobs>{
      std::nullopt,
      std::vector<RankedLogprob>{{42, -0.75f, 2, "b"},
                                 {7, -0.5f, 1, "c"},
                                 {42, -0.75f, 2, "b"},
                                 {9, -std::numeric_limits<float>::infinity(), 3, "z"}}};
  const std::string body = completion_response(kHead, {c}, {2, 1, 0});
  const auto j = nlohmann::ordered_json::parse(body);
  const auto& plp = j["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(plp.size(), 2u);
  EXPECT_TRUE(plp[0].is_null());
  std::vector<std::string> keys;
  for (auto it = plp[1].begin(); it != plp[1].end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"42", "7", "9"}));
  EXPECT_EQ(plp[1]["42"]["logprob"], -0.75);
  EXPECT_EQ(plp[1]["42"]["rank"], 2);
  EXPECT_EQ(plp[1]["42"]["decoded_token"], "b");
  EXPECT_EQ(plp[1]["9"]["logprob"], -9999.0);
  const auto& lp = j["choices"][0]["logprobs"];
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["token_logprobs"][1], -0.75);
  EXPECT_EQ(lp["text_offset"].dump(), "[0,1]");
  // Chat: the first choice's list at the top level; none asked: null.
  const json chat = json::parse(chat_completion_response(kHead, {c}, {2, 1, 0}));
  EXPECT_EQ(chat["prompt_logprobs"].size(), 2u);
  EXPECT_FALSE(chat["choices"][0].contains("prompt_logprobs"));
  Choice plain;
  EXPECT_TRUE(
      json::parse(chat_completion_response(kHead, {plain}, {}))["prompt_logprobs"].is_null());
}

TEST(Response, ChatMessageAndChatLogprobs) {
  Choice plain;
  plain.text = "ok";
  plain.finish_reason = "stop";
  const json j = json::parse(chat_completion_response({"chatcmpl-x", 5, "tiny"},
                                                      {plain, choice_with_logprobs()}, {3, 4, 2}));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"], json({{"role", "assistant"}, {"content", "ok"}}));
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  const json& lp = j["choices"][1]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 2u);
  EXPECT_EQ(lp[0]["token"], "hi");
  EXPECT_EQ(lp[0]["bytes"], json({104, 105}));
  EXPECT_EQ(lp[0]["top_logprobs"][1]["token"], "yo");
  EXPECT_EQ(lp[0]["top_logprobs"][1]["logprob"], -1.25);
  EXPECT_EQ(lp[1]["logprob"], -9999.0);
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
}

TEST(Response, StreamingChunks) {
  const json role = json::parse(chat_role_chunk(kHead, 1, true));
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(role["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(role.contains("usage") && role["usage"].is_null());

  Choice c;
  c.index = 1;
  c.text = "tok";
  const json mid = json::parse(chat_chunk(kHead, c, false));
  EXPECT_EQ(mid["choices"][0]["delta"], json({{"content", "tok"}}));
  EXPECT_FALSE(mid.contains("usage"));
  c.text.clear();
  c.finish_reason = "stop";
  const json last = json::parse(chat_chunk(kHead, c, false));
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");

  const json usage = json::parse(usage_chunk(kHead, true, {4, 6, 0}));
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 10);

  Choice t;
  t.text = "x";
  const json comp = json::parse(completion_chunk(kHead, t, false));
  EXPECT_EQ(comp["object"], "text_completion");
  EXPECT_EQ(comp["choices"][0]["text"], "x");
  EXPECT_TRUE(comp["choices"][0]["finish_reason"].is_null());

  EXPECT_EQ(sse_event("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(Response, InvalidUtf8TextBecomesReplacementCharacter) {
  Choice c;
  c.text = "a\xe4\xb8";  // a cut 3-byte character
  const json j = json::parse(completion_chunk(kHead, c, false));
  EXPECT_EQ(j["choices"][0]["text"], "a\xef\xbf\xbd");
}

TEST(Response, ErrorObject) {
  const json j = json::parse(error_body(ApiError::bad_request("n", "'n' bad")));
  EXPECT_EQ(j, json({{"error",
                      {{"message", "'n' bad"},
                       {"type", "invalid_request_error"},
                       {"param", "n"},
                       {"code", "invalid_value"}}}}));
  const json u = json::parse(error_body(ApiError::internal("boom")));
  EXPECT_TRUE(u["error"]["param"].is_null());
  EXPECT_EQ(u["error"]["type"], "server_error");
}

}  // namespace
}  // namespace vtllm::server
