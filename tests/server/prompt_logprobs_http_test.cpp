// prompt_logprobs and echo over HTTP, with the bundled tiny model on the CPU (the fake
// model refuses prompt logprob rows): the numbers in the responses against those the
// engine itself returns for the same prompt, run here directly (LlmEngine over its own
// ModelRunner), and vLLM's response shapes:
//   - completions: choices[i].prompt_logprobs = [null, {"<id>": {logprob, rank,
//     decoded_token}}, ...] holding the prompt token first, then its top-N with ranks 1..N;
//   - chat: the same list as the response's top-level prompt_logprobs;
//   - echo: the prompt text before the choice text; with logprobs the prompt's tokens
//     first in every logprobs array (null logprob and top_logprobs for the first);
//     max_tokens 0 gives the prompt alone (scoring), its perplexity exp(-mean).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/llm_engine.h"
#include "engine/model_runner.h"
#include "test_server.h"

namespace vtllm::server {
namespace {

using json = nlohmann::ordered_json;  // keeps the key order the server wrote
using testing::TestServer;
using testing::TestServerOptions;

constexpr double kTol = 1e-5;

TestServerOptions real_model() {
  TestServerOptions o;
  o.real_model = true;
  o.max_num_seqs = 4;
  o.max_model_len = 256;
  return o;
}

// The engine's prompt logprobs for `prompt`, with the TestServer's cache layout.
std::vector<std::optional<engine::SampleResult>> engine_prompt_logprobs(
    const std::vector<int32_t>& prompt, int top_n) {
  engine::EngineConfig ec;
  ec.scheduler.max_model_len = 256;
  ec.scheduler.max_num_seqs = 4;
  ec.scheduler.max_num_batched_tokens = 1024;
  ec.kv_cache.block_size = 16;
  ec.kv_cache.num_blocks = 4 * (256 / 16) + 1;
  ec.kv_cache.num_state_slots = 4;
  engine::LlmEngine eng(ec, engine::ModelRunner::load(testing::tiny_model_dir(), ec.kv_cache));
  engine::SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 1;
  p.prompt_logprobs = top_n;
  eng.add_request("ref", prompt, p);
  std::vector<std::optional<engine::SampleResult>> out;
  while (eng.has_unfinished()) {
    for (engine::EngineOutput& o : eng.step()) {
      if (!o.prompt_logprobs.empty()) out = std::move(o.prompt_logprobs);
    }
  }
  return out;
}

json post_ok(const TestServer& s, const std::string& path, const json& body) {
  auto r = s.client()->Post(path, body.dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body);
}

std::string token_text(const TestServer& s, int32_t id) {
  const int32_t one[1] = {id};
  return s.tokenizer().decode(one, false);
}

// A vLLM prompt_logprobs list against the engine's values for the same prompt.
void expect_prompt_logprobs(const TestServer& s, const json& got, const std::vector<int32_t>& ids,
                            const std::vector<std::optional<engine::SampleResult>>& want,
                            int top_n) {
  ASSERT_TRUE(got.is_array()) << got;
  ASSERT_EQ(got.size(), ids.size());
  ASSERT_EQ(want.size(), ids.size());
  EXPECT_TRUE(got[0].is_null());
  ASSERT_FALSE(want[0].has_value());
  for (size_t i = 1; i < ids.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(want[i].has_value());
    const json& d = got[i];
    ASSERT_TRUE(d.is_object()) << d;
    // The prompt token first, then the top-N; a token in both once.
    const auto key = std::to_string(ids[i]);
    ASSERT_TRUE(d.contains(key)) << d;
    EXPECT_EQ(d.begin().key(), key);
    EXPECT_NEAR(d[key]["logprob"].get<double>(), want[i]->logprob, kTol);
    EXPECT_EQ(d[key]["rank"].get<int64_t>(), want[i]->rank);
    EXPECT_EQ(d[key]["decoded_token"].get<std::string>(), token_text(s, ids[i]));
    ASSERT_EQ(want[i]->top_logprobs.size(), size_t(top_n));
    bool token_in_top = false;
    for (int k = 0; k < top_n; ++k) {
      const engine::TokenLogprob& t = want[i]->top_logprobs[size_t(k)];
      const auto tk = std::to_string(t.token);
      ASSERT_TRUE(d.contains(tk)) << d;
      EXPECT_NEAR(d[tk]["logprob"].get<double>(), t.logprob, kTol);
      if (t.token == ids[i]) {
        token_in_top = true;
        EXPECT_EQ(want[i]->rank, k + 1);
      } else {
        EXPECT_EQ(d[tk]["rank"].get<int64_t>(), k + 1);
      }
      EXPECT_EQ(d[tk]["decoded_token"].get<std::string>(), token_text(s, t.token));
    }
    EXPECT_EQ(d.size(), size_t(top_n) + (token_in_top ? 0 : 1));
  }
}

TEST(PromptLogprobsHttp, CompletionPromptLogprobsEqualTheEngines) {
  TestServer s(real_model());
  const std::string prompt = "The quick brown fox jumps over the lazy dog.";
  const auto ids = s.tokenizer().encode(prompt, true);
  const json j = post_ok(s, "/v1/completions",
                         {{"prompt", prompt},
                          {"max_tokens", 2},
                          {"temperature", 0},
                          {"n", 2},
                          {"prompt_logprobs", 3}});
  ASSERT_EQ(j["choices"].size(), 2u);
  const auto want = engine_prompt_logprobs(ids, 3);
  // Every choice of the prompt carries the prompt's list (vLLM: final_res.prompt_logprobs).
  for (const json& c : j["choices"]) {
    expect_prompt_logprobs(s, c["prompt_logprobs"], ids, want, 3);
    EXPECT_TRUE(c["logprobs"].is_null());
  }
  // Not asked for: null.
  const json plain = post_ok(s, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 1}});
  EXPECT_TRUE(plain["choices"][0].contains("prompt_logprobs"));
  EXPECT_TRUE(plain["choices"][0]["prompt_logprobs"].is_null());
}

TEST(PromptLogprobsHttp, ChatPromptLogprobsAreTopLevel) {
  TestServer s(real_model());
  const json messages = json::array({{{"role", "user"}, {"content", "Name a colour."}}});
  const json tok = post_ok(s, "/tokenize", {{"messages", messages}});
  const auto ids = tok["tokens"].get<std::vector<int32_t>>();
  ASSERT_GT(ids.size(), 2u);
  const json j = post_ok(
      s, "/v1/chat/completions",
      {{"messages", messages}, {"max_tokens", 2}, {"temperature", 0}, {"prompt_logprobs", 2}});
  expect_prompt_logprobs(s, j["prompt_logprobs"], ids, engine_prompt_logprobs(ids, 2), 2);
  EXPECT_FALSE(j["choices"][0].contains("prompt_logprobs"));
}

TEST(PromptLogprobsHttp, EchoPrependsThePromptAndItsLogprobs) {
  TestServer s(real_model());
  const std::string prompt = "Once upon a time there was";
  const auto ids = s.tokenizer().encode(prompt, true);
  const json base = {{"prompt", prompt},
                     {"max_tokens", 4},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"logprobs", 2}};
  const json plain = post_ok(s, "/v1/completions", base);
  json echo_body = base;
  echo_body["echo"] = true;
  const json echoed = post_ok(s, "/v1/completions", echo_body);
  const json& pc = plain["choices"][0];
  const json& ec = echoed["choices"][0];
  EXPECT_EQ(ec["text"], prompt + pc["text"].get<std::string>());

  const json& lp = ec["logprobs"];
  const json& plp = pc["logprobs"];
  const size_t np = ids.size(), nc = plp["tokens"].size();
  ASSERT_EQ(nc, 4u);
  for (const char* k : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    ASSERT_EQ(lp[k].size(), np + nc) << k;
  }
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["text_offset"][0], 0);
  const auto want = engine_prompt_logprobs(ids, 2);
  for (size_t i = 0; i < np; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(lp["tokens"][i].get<std::string>(), token_text(s, ids[i]));
    if (i > 0) {
      EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), want[i]->logprob, kTol);
      // top_logprobs: the top-2 and the prompt token itself.
      const json& top = lp["top_logprobs"][i];
      EXPECT_NEAR(top[token_text(s, ids[i])].get<double>(), want[i]->logprob, kTol);
      for (const engine::TokenLogprob& t : want[i]->top_logprobs) {
        EXPECT_NEAR(top[token_text(s, t.token)].get<double>(), t.logprob, kTol);
      }
      EXPECT_EQ(lp["text_offset"][i].get<size_t>(),
                lp["text_offset"][i - 1].get<size_t>() + token_text(s, ids[i - 1]).size());
    }
  }
  // Then the completion's own, as the plain request returned them.
  for (size_t i = 0; i < nc; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(lp["tokens"][np + i], plp["tokens"][i]);
    EXPECT_NEAR(lp["token_logprobs"][np + i].get<double>(), plp["token_logprobs"][i].get<double>(),
                kTol);
    EXPECT_EQ(lp["top_logprobs"][np + i].size(), plp["top_logprobs"][i].size());
  }
  // echo + logprobs asks for the prompt's logprobs too (vLLM: prompt_logprobs = logprobs).
  expect_prompt_logprobs(s, ec["prompt_logprobs"], ids, want, 2);
  EXPECT_EQ(echoed["usage"]["completion_tokens"], 4);
}

TEST(PromptLogprobsHttp, EchoWithoutLogprobsAndStreamed) {
  TestServer s(real_model());
  const std::string prompt = "Hello there";
  const json plain =
      post_ok(s, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 3}, {"temperature", 0}});
  const json echoed =
      post_ok(s, "/v1/completions",
              {{"prompt", prompt}, {"max_tokens", 3}, {"temperature", 0}, {"echo", true}});
  EXPECT_EQ(echoed["choices"][0]["text"].get<std::string>(), prompt + plain["choices"][0]["text"].get<std::string>());
  EXPECT_TRUE(echoed["choices"][0]["logprobs"].is_null());
  EXPECT_TRUE(echoed["choices"][0]["prompt_logprobs"].is_null());

  // Streamed with logprobs: the first chunk carries the prompt and its logprobs.
  auto r = s.client()->Post("/v1/completions",
                            json({{"prompt", prompt},
                                  {"max_tokens", 3},
                                  {"temperature", 0},
                                  {"echo", true},
                                  {"logprobs", 1},
                                  {"stream", true}})
                                .dump(),
                            "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::string text;
  std::vector<json> token_logprobs;
  size_t at = 0;
  while ((at = r->body.find("data: ", at)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", at);
    const std::string ev = r->body.substr(at + 6, end - at - 6);
    at = end;
    if (ev == "[DONE]") break;
    const json c = json::parse(ev)["choices"][0];
    text += c["text"].get<std::string>();
    for (const json& v : c["logprobs"]["token_logprobs"]) token_logprobs.push_back(v);
  }
  EXPECT_EQ(text, echoed["choices"][0]["text"].get<std::string>());
  const auto ids = s.tokenizer().encode(prompt, true);
  ASSERT_EQ(token_logprobs.size(), ids.size() + 3);
  EXPECT_TRUE(token_logprobs[0].is_null());
  const auto want = engine_prompt_logprobs(ids, 1);
  for (size_t i = 1; i < ids.size(); ++i) {
    EXPECT_NEAR(token_logprobs[i].get<double>(), want[i]->logprob, kTol) << i;
  }
}

// vLLM's scoring form: echo, logprobs and max_tokens 0 give the prompt alone, so a
// passage's perplexity is exp(-mean) of its token_logprobs after the first.
TEST(PromptLogprobsHttp, EchoWithMaxTokensZeroScoresThePassage) {
  TestServer s(real_model());
  const std::string passage =
      "It was a bright cold day in April, and the clocks were striking thirteen.";
  const auto ids = s.tokenizer().encode(passage, true);
  const json j = post_ok(s, "/v1/completions",
                         {{"prompt", passage}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 0}});
  const json& c = j["choices"][0];
  EXPECT_EQ(c["text"], passage);
  const json& lps = c["logprobs"]["token_logprobs"];
  ASSERT_EQ(lps.size(), ids.size());
  EXPECT_TRUE(lps[0].is_null());
  double sum = 0;
  for (size_t i = 1; i < lps.size(); ++i) sum += lps[i].get<double>();
  const double ppl = std::exp(-sum / double(lps.size() - 1));

  const auto want = engine_prompt_logprobs(ids, 0);
  double want_sum = 0;
  for (size_t i = 1; i < want.size(); ++i) want_sum += want[i]->logprob;
  const double want_ppl = std::exp(-want_sum / double(want.size() - 1));
  EXPECT_NEAR(ppl, want_ppl, 1e-5 * want_ppl);
  EXPECT_GT(want_ppl, 1.0);
  // vLLM samples one token for it and counts it.
  EXPECT_EQ(j["usage"]["prompt_tokens"], int64_t(ids.size()));
  EXPECT_EQ(j["usage"]["completion_tokens"], 1);
}

TEST(PromptLogprobsHttp, InvalidCombinationsNameTheField) {
  TestServer s(real_model());
  const std::vector<std::tuple<std::string, json, std::string>> cases = {
      {"/v1/completions",
       {{"prompt", "a"}, {"prompt_logprobs", 1}, {"stream", true}},
       "prompt_logprobs"},
      {"/v1/completions", {{"prompt", "a"}, {"prompt_logprobs", 21}}, "prompt_logprobs"},
      {"/v1/completions", {{"prompt", "a"}, {"max_tokens", 0}}, "max_tokens"},
      {"/v1/completions",
       {{"prompt", "a"}, {"echo", true}, {"logprobs", 1}, {"stream", true}, {"n", 2}},
       "echo"},
      {"/v1/chat/completions",
       {{"messages", json::array({{{"role", "user"}, {"content", "a"}}})},
        {"prompt_logprobs", 1},
        {"stream", true}},
       "prompt_logprobs"},
      {"/v1/chat/completions",
       {{"messages", json::array({{{"role", "user"}, {"content", "a"}}})}, {"echo", true}},
       "echo"},
  };
  for (const auto& [path, body, param] : cases) {
    SCOPED_TRACE(body.dump());
    auto r = s.client()->Post(path, body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["param"].get<std::string>(), param);
  }
  // prompt_logprobs 0 with stream passes, as in vLLM (its check is > 0).
  auto r = s.client()->Post(
      "/v1/completions",
      json({{"prompt", "a"}, {"prompt_logprobs", 0}, {"stream", true}, {"max_tokens", 1}}).dump(),
      "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

}  // namespace
}  // namespace vtllm::server
