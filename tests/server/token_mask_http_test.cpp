// allowed_token_ids and bad_words over HTTP with the bundled tiny model on the CPU:
// completions and chat return only allowed tokens (return_token_ids), an id outside
// the vocabulary is a 400, and a banned word's token (as the engine tokenizes it)
// never comes back.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/llm_engine.h"
#include "test_server.h"

namespace vtllm::server {
namespace {

using json = nlohmann::json;
using testing::TestServer;
using testing::TestServerOptions;

TestServerOptions real_model() {
  TestServerOptions o;
  o.real_model = true;
  o.max_num_seqs = 4;
  o.max_model_len = 256;
  return o;
}

json post(const TestServer& s, const std::string& path, const json& body, int want_status = 200) {
  auto r = s.client()->Post(path, body.dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, want_status) << r->body;
  return json::parse(r->body);
}

TEST(TokenMaskHttp, AllowedTokenIdsOnCompletionsAndChat) {
  TestServer s(real_model());
  const std::vector<int32_t> allowed = {11, 12, 300, 301, 1000};
  const std::set<int32_t> ok(allowed.begin(), allowed.end());
  const json c = post(s, "/v1/completions",
                      {{"prompt", "Once upon a time"},
                       {"max_tokens", 10},
                       {"temperature", 1.0},
                       {"seed", 3},
                       {"ignore_eos", true},
                       {"allowed_token_ids", allowed},
                       {"return_token_ids", true}});
  const auto ids = c["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  EXPECT_EQ(ids.size(), 10u);
  for (int32_t t : ids) EXPECT_TRUE(ok.count(t)) << t;
  const json chat = post(s, "/v1/chat/completions",
                         {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                          {"max_tokens", 6},
                          {"temperature", 0},
                          {"ignore_eos", true},
                          {"allowed_token_ids", allowed},
                          {"return_token_ids", true}});
  const auto chat_ids = chat["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  EXPECT_EQ(chat_ids.size(), 6u);
  for (int32_t t : chat_ids) EXPECT_TRUE(ok.count(t)) << t;
  const json bad =
      post(s, "/v1/completions",
           {{"prompt", "a"}, {"max_tokens", 2}, {"allowed_token_ids", {5, 999999}}}, 400);
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("allowed_token_ids"), std::string::npos)
      << bad;
}

TEST(TokenMaskHttp, BadWordsAreNeverGenerated) {
  TestServer s(real_model());
  const json base_body = {{"prompt", "The weather today is"},
                          {"max_tokens", 8},
                          {"temperature", 0},
                          {"ignore_eos", true},
                          {"return_token_ids", true}};
  const auto free_ids =
      post(s, "/v1/completions", base_body)["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(free_ids.size(), 8u);
  // A word whose one-token form (as the engine tokenizes bad_words) the free run produced.
  std::string word;
  std::vector<int32_t> hit;
  for (int32_t t : free_ids) {
    engine::SamplingParams p;
    p.bad_words = {s.tokenizer().decode(std::vector<int32_t>{t}, false)};
    hit.clear();
    for (const auto& w : engine::resolve_bad_words(p, &s.tokenizer()).bad_words_token_ids)
      if (w.size() == 1 && std::count(free_ids.begin(), free_ids.end(), w[0])) hit.push_back(w[0]);
    if (!hit.empty()) {
      word = p.bad_words[0];
      break;
    }
  }
  ASSERT_FALSE(hit.empty());
  json body = base_body;
  body["bad_words"] = {word};
  const auto ids =
      post(s, "/v1/completions", body)["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  EXPECT_EQ(ids.size(), 8u);
  for (int32_t t : ids)
    for (int32_t h : hit) EXPECT_NE(t, h) << "'" << word << "'";
  EXPECT_NE(ids, free_ids);
}

}  // namespace
}  // namespace vtllm::server
