// usage.prompt_tokens_details.cached_tokens and the prefix-cache counters of
// /metrics: a repeated prompt reports the tokens its prefix-cache hit covered
// (whole 16-token blocks, never its last token), in whole responses, in the
// final usage chunk of a stream, and on the bundled hybrid model through GDN
// state snapshots.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_server.h"

namespace vtllm::server {
namespace {

using nlohmann::json;
using testing::TestServer;
using testing::TestServerOptions;

// The value of an exposition sample line "NAME{labels} VALUE".
double metric(const std::string& page, const std::string& name) {
  const size_t at = page.find("\n" + name + "{");
  EXPECT_NE(at, std::string::npos) << name;
  if (at == std::string::npos) return -1;
  const size_t end = page.find('\n', at + 1);
  const std::string line = page.substr(at + 1, end - at - 1);
  return std::stod(line.substr(line.rfind(' ') + 1));
}

json post(TestServer& s, const std::string& path, const std::string& body) {
  auto r = s.client()->Post(path, body, "application/json");
  EXPECT_TRUE(r);
  if (!r) return {};
  EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body);
}

std::string prompt_of(int words) {
  std::string p;
  for (int i = 0; i < words; ++i) p += " word" + std::to_string(i * 7 % 23);
  return p;
}

int64_t whole_blocks_before_last(int64_t prompt_tokens) { return (prompt_tokens - 1) / 16 * 16; }

TEST(PrefixCacheUsage, RepeatedCompletionReportsItsCachedTokens) {
  TestServer s;
  const std::string body =
      json({{"prompt", prompt_of(30)}, {"max_tokens", 4}, {"temperature", 0}}).dump();
  const json first = post(s, "/v1/completions", body);
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const int64_t n = first["usage"]["prompt_tokens"];
  ASSERT_GT(n, 32);
  const json again = post(s, "/v1/completions", body);
  EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"], whole_blocks_before_last(n));
  EXPECT_EQ(again["choices"][0]["text"], first["choices"][0]["text"]);
  const std::string page = s.client()->Get("/metrics")->body;
  EXPECT_EQ(metric(page, "vtllm:prefix_cache_queries_total"), double(2 * n));
  EXPECT_EQ(metric(page, "vtllm:prefix_cache_hits_total"), double(whole_blocks_before_last(n)));
}

TEST(PrefixCacheUsage, StreamedChatFinalUsageCarriesCachedTokens) {
  TestServer s;
  const json req = {{"messages", {{{"role", "user"}, {"content", prompt_of(30)}}}},
                    {"max_tokens", 3},
                    {"temperature", 0},
                    {"stream", true},
                    {"stream_options", {{"include_usage", true}}}};
  int64_t cached[2] = {-1, -1}, prompt_tokens = 0;
  for (int i = 0; i < 2; ++i) {
    auto r = s.client()->Post("/v1/chat/completions", req.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    // The usage chunk is the last event before [DONE].
    const size_t done = r->body.rfind("data: [DONE]");
    ASSERT_NE(done, std::string::npos);
    const size_t start = r->body.rfind("data: ", done - 3);
    const json usage = json::parse(r->body.substr(start + 6, done - start - 8))["usage"];
    cached[i] = usage["prompt_tokens_details"]["cached_tokens"];
    prompt_tokens = usage["prompt_tokens"];
  }
  EXPECT_EQ(cached[0], 0);
  EXPECT_EQ(cached[1], whole_blocks_before_last(prompt_tokens));
}

// The bundled tiny Qwen3.5 (hybrid): a repeated prompt hits through the GDN
// state snapshot taken at its last block boundary, and samples the same text.
TEST(PrefixCacheUsage, HybridModelHitsThroughStateSnapshots) {
  TestServerOptions o;
  o.real_model = true;
  o.max_num_seqs = 2;
  o.num_state_snapshots = 8;
  TestServer s(o);
  const std::string body =
      json({{"prompt", prompt_of(40)}, {"max_tokens", 8}, {"temperature", 0}}).dump();
  const json first = post(s, "/v1/completions", body);
  const int64_t n = first["usage"]["prompt_tokens"];
  ASSERT_GT(n, 32);
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const json again = post(s, "/v1/completions", body);
  EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"], whole_blocks_before_last(n));
  EXPECT_EQ(again["choices"][0]["text"], first["choices"][0]["text"]);
}

}  // namespace
}  // namespace vtllm::server
