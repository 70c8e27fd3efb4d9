#include "server/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/version.h"
#include "server/stats_logger.h"
#include "test_server.h"

namespace vtllm::server {
namespace {

using nlohmann::json;
using testing::TestServer;
using testing::TestServerOptions;

// The "data: ..." payloads of an SSE body, in order.
std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "unterminated event in " << body;
    if (end == std::string::npos) break;
    const std::string ev = body.substr(at, end - at);
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    out.push_back(ev.substr(6));
    at = end + 2;
  }
  return out;
}

double metric(const std::string& page, const std::string& name) {
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) == 0) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  ADD_FAILURE() << "no metric " << name;
  return -1;
}

std::string expected_text(const TestServer& s, const std::string& prompt, int64_t max_tokens) {
  const auto ids = s.tokenizer().encode(prompt, true);
  return s.tokenizer().decode(testing::expected_ids(s.tokenizer(), ids, max_tokens), true);
}

TEST(HttpServer, CompletionIsTheModelsGreedyContinuation) {
  TestServer s;
  auto c = s.client();
  auto r =
      c->Post("/v1/completions",
              R"({"model": "tiny", "prompt": "Hello world", "max_tokens": 12, "temperature": 0})",
              "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["text"], expected_text(s, "Hello world", 12));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
  EXPECT_EQ(j["usage"]["prompt_tokens"], s.tokenizer().encode("Hello world", true).size());
}

// The text of a completion whose every token is forced to `token` by logit_bias,
// whole and streamed (the deltas joined); both must agree.
std::string forced_text(const TestServer& s, int32_t token, int max_tokens,
                        const std::string& extra) {
  auto c = s.client();
  std::string whole;
  for (bool stream : {false, true}) {
    const std::string body =
        "{\"prompt\": \"Hi\", \"temperature\": 0, \"max_tokens\": " + std::to_string(max_tokens) +
        ", \"logit_bias\": {\"" + std::to_string(token) +
        "\": 100}, \"stream\": " + (stream ? "true" : "false") + extra + "}";
    auto r = c->Post("/v1/completions", body, "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    if (!r || r->status != 200) return "<error>";
    std::string text;
    if (!stream) {
      text = json::parse(r->body)["choices"][0]["text"];
      whole = text;
      continue;
    }
    for (const std::string& p : sse_payloads(r->body)) {
      if (p == "[DONE]") continue;
      const json j = json::parse(p);
      if (!j["choices"].empty()) text += j["choices"][0]["text"].get<std::string>();
    }
    EXPECT_EQ(text, whole) << "streamed and whole text differ for " << body;
  }
  return whole;
}

TEST(HttpServer, GenerationConfigMaxNewTokensCapsEveryRequest) {
  TestServerOptions o;
  o.sampling_defaults.max_tokens = 3;
  o.sampling_defaults.temperature = 0.0f;  // greedy unless the request says otherwise
  TestServer s(o);
  for (const char* body : {R"({"prompt": "Hello world", "max_tokens": 12})",
                           R"({"prompt": "Hello world"})"}) {
    auto r = s.client()->Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto j = nlohmann::json::parse(r->body);
    EXPECT_EQ(j["usage"]["completion_tokens"], 3) << body;
    EXPECT_EQ(j["choices"][0]["text"], expected_text(s, "Hello world", 3)) << body;
  }
}

TEST(HttpServer, RequestPhaseHistogramsCountEachFinishedRequest) {
  TestServer s;
  for (int i = 0; i < 3; ++i) {
    auto r = s.client()->Post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 4})",
                              "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
  }
  const std::string page = s.client()->Get("/metrics")->body;
  for (const char* name :
       {"vllm:request_queue_time_seconds_count", "vllm:request_prefill_time_seconds_count",
        "vllm:request_decode_time_seconds_count", "vllm:request_inference_time_seconds_count",
        "vllm:request_prompt_tokens_count", "vllm:request_generation_tokens_count",
        "vllm:e2e_request_latency_seconds_count", "vtllm:request_params_n_count"})
    EXPECT_EQ(metric(page, name), 3) << name << "\n" << page;
  EXPECT_EQ(metric(page, "vllm:request_generation_tokens_sum"), 12);
  EXPECT_EQ(metric(page, "vllm:generation_tokens_total"), 12);
}

TEST(HttpServer, AccessLogWritesOneLinePerResponse) {
  TestServerOptions o;
  o.http.access_log = true;
  ::testing::internal::CaptureStderr();
  {
    TestServer s(o);
    auto r = s.client()->Post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})",
                              "application/json");
    ASSERT_TRUE(r);
    auto bad = s.client()->Post("/v1/completions", R"({"prompt": 5})", "application/json");
    ASSERT_TRUE(bad);
    EXPECT_EQ(s.client()->Get("/health")->status, 200);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("\"POST /v1/completions HTTP/1.1\" 200 "), std::string::npos) << log;
  EXPECT_NE(log.find("\"POST /v1/completions HTTP/1.1\" 400 "), std::string::npos) << log;
  EXPECT_NE(log.find("\"GET /health HTTP/1.1\" 200 "), std::string::npos) << log;
  EXPECT_NE(log.find("vtllm serve: 127.0.0.1:"), std::string::npos) << log;
}

TEST(HttpServer, StatsLineReportsThroughputOnlyWhenBusy) {
  TestServer s;
  StatsLogger logger(s.service(), std::chrono::milliseconds(0));
  EXPECT_FALSE(logger.tick().has_value());  // idle
  auto r = s.client()->Post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 5})",
                            "application/json");
  ASSERT_TRUE(r);
  // The engine's stats are as of its last iteration, which may end after the reply.
  for (int i = 0; i < 500 && (s.service().engine_stats().num_running != 0 ||
                              s.service().engine_stats().num_waiting != 0);
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::optional<std::string> line = logger.tick();
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("avg prompt throughput "), std::string::npos) << *line;
  EXPECT_NE(line->find("running 0 reqs, waiting 0 reqs"), std::string::npos) << *line;
  EXPECT_EQ(line->find("generation throughput 0.0 "), std::string::npos) << *line;
  EXPECT_FALSE(logger.tick().has_value());  // nothing since
}

TEST(HttpServer, SkipSpecialTokensIsPerRequest) {
  TestServer s;
  const int32_t im_start = *s.tokenizer().token_to_id("<|im_start|>");
  ASSERT_TRUE(s.tokenizer().is_special(im_start));
  const std::vector<int32_t> three(3, im_start);
  EXPECT_EQ(forced_text(s, im_start, 3, ""), "");
  EXPECT_EQ(forced_text(s, im_start, 3, ", \"skip_special_tokens\": true"), "");
  EXPECT_EQ(forced_text(s, im_start, 3, ", \"skip_special_tokens\": false"),
            s.tokenizer().decode(three, false));
  EXPECT_EQ(s.tokenizer().decode(three, false), "<|im_start|><|im_start|><|im_start|>");
}

TEST(HttpServer, TheEosTokenIsNotTextUnlessIncluded) {
  TestServer s;  // eos 4098 (<|im_end|>)
  const std::string keep = ", \"skip_special_tokens\": false";
  EXPECT_EQ(forced_text(s, 4098, 5, keep), "");
  EXPECT_EQ(forced_text(s, 4098, 5, keep + ", \"include_stop_str_in_output\": true"), "<|im_end|>");
}

TEST(HttpServer, AnIncompleteCharacterAtTheEndIsRenderedAsDecodeDoes) {
  TestServer s;
  // Byte-level BPE: the token "\u00e4" is the lone byte 0xE4, the start of a
  // 3-byte character; ending on it leaves the character incomplete.
  const int32_t lead = *s.tokenizer().token_to_id("\xc3\xa4");
  for (int n : {1, 2}) {
    const std::vector<int32_t> ids(size_t(n), lead);
    const std::string want = s.tokenizer().decode(ids, true);
    EXPECT_NE(want, "");
    EXPECT_NE(want.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
    EXPECT_EQ(forced_text(s, lead, n, ""), want) << n;
  }
}

TEST(HttpServer, ChatStreamSendsRoleFirstThenDeltasThenUsageThenDone) {
  TestServer s;
  auto c = s.client();
  const std::string req = R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 9,
    "temperature": 0, "stream": true, "stream_options": {"include_usage": true}})";
  auto r = c->Post("/v1/chat/completions", req, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  const auto events = sse_payloads(r->body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json role = json::parse(events[0]);
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  std::string text, finish;
  for (size_t i = 1; i + 2 < events.size(); ++i) {
    const json e = json::parse(events[i]);
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    EXPECT_TRUE(e["usage"].is_null());
    text += e["choices"][0]["delta"].value("content", "");
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  const json usage = json::parse(events[events.size() - 2]);
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 9);
  EXPECT_EQ(finish, "length");
  // The reference: the chat template's prompt, tokenized without special tokens, continued.
  auto t = s.client()->Post("/tokenize", R"({"messages": [{"role": "user", "content": "hi"}]})",
                            "application/json");
  ASSERT_EQ(t->status, 200) << t->body;
  const std::vector<int32_t> prompt = json::parse(t->body)["tokens"];
  EXPECT_EQ(s.tokenizer().decode(prompt, false),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(usage["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(text, s.tokenizer().decode(testing::expected_ids(s.tokenizer(), prompt, 9), true));
}

TEST(HttpServer, ConcurrentStreamsEqualSequentialOnes) {
  TestServer s;
  constexpr int kClients = 64;
  auto request = [](int i) {
    return json({{"prompt", "request number " + std::to_string(i * 37)},
                 {"max_tokens", 8 + i % 9},
                 {"temperature", 0},
                 {"stream", true}})
        .dump();
  };
  auto run = [&](int i) {
    auto r = s.client()->Post("/v1/completions", request(i), "application/json");
    std::string text;
    if (!r) return std::string("<failed: no response>");
    if (r->status != 200) return str_cat("<failed: ", r->status, " ", r->body, ">");
    for (const std::string& e : sse_payloads(r->body)) {
      if (e != "[DONE]") text += json::parse(e)["choices"][0]["text"].get<std::string>();
    }
    return text;
  };
  std::vector<std::string> sequential(kClients), concurrent(kClients);
  for (int i = 0; i < kClients; ++i) sequential[i] = run(i);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) threads.emplace_back([&, i] { concurrent[i] = run(i); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(concurrent[i], sequential[i]) << "request " << i;
    EXPECT_EQ(sequential[i],
              expected_text(s, "request number " + std::to_string(i * 37), 8 + i % 9));
  }
}

struct Bad {
  const char* path;
  std::string body;
  int status;
  const char* param;  // nullptr: null
};

TEST(HttpServer, MalformedRequestsGetErrorObjectsAndTheServerKeepsServing) {
  TestServer s;
  auto c = s.client();
  const std::vector<Bad> cases = {
      {"/v1/completions", "{\"prompt\": ", 400, nullptr},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": -5})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt": "a", "n": 100000})", 400, "n"},
      {"/v1/completions", R"({"prompt": "a", "temperature": "x"})", 400, "temperature"},
      {"/v1/completions", "{\"prompt\": \"\xc0\xaf\"}", 400, nullptr},
      {"/v1/completions", R"({"prompt": "a", "model": "other"})", 404, nullptr},
      {"/v1/completions", R"({"prompt": [1, 99999999]})", 400, "prompt"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": 100000})", 400, "max_tokens"},
      {"/v1/chat/completions", R"({"messages": []})", 400, "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user"}], "stream": 1})", 400, "stream"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": {"a": 1}}]})", 400,
       "messages[0].content"},
      {"/tokenize", R"({"prompt": 5})", 400, "prompt"},
      {"/detokenize", R"({"tokens": [-1]})", 400, "tokens"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.body);
    auto r = c->Post(b.path, b.body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, b.status) << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty());
    EXPECT_TRUE(e["type"].is_string());
    if (b.param) {
      EXPECT_EQ(e["param"], b.param);
    }
    // Unknown fields are ignored, as vLLM does: the next request succeeds.
    auto ok =
        c->Post("/v1/completions", R"({"prompt": "ok", "max_tokens": 2, "unknown_field": [1]})",
                "application/json");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body;
  }
  auto r = c->Get("/no/such/route");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(json::parse(r->body)["error"]["type"], "not_found_error");
}

TEST(HttpServer, PromptOverTheContextNamesBothLengths) {
  TestServerOptions o;
  o.max_model_len = 64;
  TestServer s(o);
  std::string prompt;
  for (int i = 0; i < 100; ++i) prompt += " word";
  auto r =
      s.client()->Post("/v1/completions", json({{"prompt", prompt}}).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "context_length_exceeded");
  const std::string msg = e["message"];
  EXPECT_NE(msg.find("64"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(s.tokenizer().encode(prompt, true).size())), std::string::npos)
      << msg;
}

TEST(HttpServer, BodyOverTheLimitIs413) {
  TestServerOptions o;
  o.max_body_bytes = 1000;
  TestServer s(o);
  const std::string big = json({{"prompt", std::string(2000, 'a')}}).dump();
  auto r = s.client()->Post("/v1/completions", big, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "request_too_large");
  auto ok = s.client()->Post("/v1/completions", R"({"prompt": "a", "max_tokens": 1})",
                             "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpServer, ApiKeyGuardsV1Routes) {
  TestServerOptions o;
  o.api_key = "sk-test";
  TestServer s(o);
  auto c = s.client();
  auto r = c->Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(json::parse(r->body)["error"]["type"], "authentication_error");
  r = c->Get("/v1/models", {{"Authorization", "Bearer wrong"}});
  EXPECT_EQ(r->status, 401);
  r = c->Get("/v1/models", {{"Authorization", "Bearer sk-test"}});
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["data"][0]["id"], "tiny");
  EXPECT_EQ(c->Get("/health")->status, 200);
  EXPECT_EQ(c->Get("/metrics")->status, 200);
  EXPECT_EQ(json::parse(c->Get("/version")->body)["version"], vtllm::version());
}

// Sends a streaming request over a raw socket, reads until the first SSE event
// arrives, then closes the connection. Returns whether an event was seen.
bool stream_then_hang_up(int port, const std::string& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool seen = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req =
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == ssize_t(req.size())) {
      std::string got;
      char buf[4096];
      // Bounded: a few hundred reads at most before giving up.
      for (int i = 0; i < 500 && !seen; ++i) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, size_t(n));
        seen = got.find("data: ") != std::string::npos;
      }
    }
  }
  ::close(fd);
  return seen;
}

TEST(HttpServer, ClientsThatDisconnectMidStreamLeakNoBlocks) {
  TestServerOptions o;
  o.step_time = std::chrono::microseconds(500);
  TestServer s(o);
  constexpr int kClients = 160;
  std::atomic<int> seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kClients; i += 16) {
        const std::string body = json({{"prompt", "leave early " + std::to_string(i)},
                                       {"max_tokens", 300},
                                       {"stream", true}})
                                     .dump();
        seen += stream_then_hang_up(s.port(), body);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(seen.load(), kClients);
  // Every request ends within a bounded wait; then no block or slot is held.
  std::string page;
  for (int i = 0; i < 500; ++i) {
    page = s.client()->Get("/metrics")->body;
    if (metric(page, "vtllm:num_requests_running") == 0 &&
        metric(page, "vtllm:kv_cache_blocks_used") == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(metric(page, "vtllm:num_requests_running"), 0) << page;
  EXPECT_EQ(metric(page, "vtllm:num_requests_waiting"), 0);
  EXPECT_EQ(metric(page, "vtllm:kv_cache_blocks_used"), 0);
  EXPECT_GT(metric(page, "vtllm:kv_cache_blocks_total"), 0);
  // The requests were cut short, not run to their 300 tokens.
  EXPECT_LT(metric(page, "vtllm:generation_tokens_total"), 300.0 * kClients / 2);
  EXPECT_EQ(s.service().in_flight(), 0);
  auto ok = s.client()->Post("/v1/completions", R"({"prompt": "still here", "max_tokens": 3})",
                             "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpServer, ShutdownDrainsInFlightStreamsAndRefusesNewWork) {
  TestServerOptions o;
  o.step_time = std::chrono::microseconds(2000);
  TestServer s(o);
  std::string body;
  std::thread inflight([&] {
    auto r = s.client()->Post(
        "/v1/completions",
        R"({"prompt": "drain me", "max_tokens": 100, "temperature": 0, "stream": true})",
        "application/json");
    if (r) body = r->body;
  });
  // Wait (bounded) until the request is running, then shut down while it streams.
  for (int i = 0; i < 500 && s.service().in_flight() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(s.service().in_flight(), 1);
  s.service().begin_shutdown();
  auto refused = s.client()->Post("/v1/completions", R"({"prompt": "late", "max_tokens": 2})",
                                  "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(json::parse(refused->body)["error"]["code"], "shutting_down");
  s.stop();
  inflight.join();
  const auto events = sse_payloads(body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i)
    text += json::parse(events[i])["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, expected_text(s, "drain me", 100));
}

TEST(HttpServer, TruncatePromptTokensKeepsTheEndOfThePrompt) {
  TestServer s;
  const std::vector<int32_t> prompt = {101, 202, 303, 404, 505, 606, 707, 808};
  const std::vector<int32_t> tail(prompt.end() - 3, prompt.end());
  auto r = s.client()->Post("/v1/completions",
                            json({{"prompt", prompt},
                                  {"max_tokens", 6},
                                  {"temperature", 0},
                                  {"truncate_prompt_tokens", 3}})
                                .dump(),
                            "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  // The fake model continues from the last token and its position: positions
  // restart at 0 for the kept tail.
  EXPECT_EQ(j["choices"][0]["text"],
            s.tokenizer().decode(testing::expected_ids(s.tokenizer(), tail, 6), true));
}

TEST(HttpServer, ChatTemplateKwargsReachTheTemplate) {
  TestServer s;
  const std::string messages = R"("messages": [{"role": "user", "content": "Hi"}])";
  auto plain = s.client()->Post("/tokenize", "{" + messages + "}", "application/json");
  auto off = s.client()->Post(
      "/tokenize", "{" + messages + R"(, "chat_template_kwargs": {"enable_thinking": false}})",
      "application/json");
  ASSERT_TRUE(plain && off);
  ASSERT_EQ(off->status, 200) << off->body;
  const std::vector<int32_t> a = json::parse(plain->body)["tokens"];
  const std::vector<int32_t> b = json::parse(off->body)["tokens"];
  // Qwen3.5's template writes an empty think block when thinking is off.
  const std::string text = s.tokenizer().decode(b, false);
  EXPECT_GT(b.size(), a.size());
  EXPECT_NE(text.find("<think>"), std::string::npos) << text;
  EXPECT_EQ(s.tokenizer().decode(a, false).find("<think>"), std::string::npos);
}

TEST(HttpServer, StopReasonNamesTheStopTokenOrString) {
  TestServer s;
  const std::vector<int32_t>& ascii = testing::ascii_ids(s.tokenizer());
  const int32_t forced = ascii[17];
  const int32_t one[1] = {forced};
  const std::string forced_text = s.tokenizer().decode(one, false);
  auto reason = [&](const std::string& extra, bool stream) {
    const std::string body =
        str_cat(R"({"prompt": "Hi", "temperature": 0, "max_tokens": 4, "logit_bias": {")", forced,
                R"(": 100})", extra, ", \"stream\": ", stream ? "true" : "false", "}");
    auto r = s.client()->Post("/v1/completions", body, "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    if (!r || r->status != 200) return json("<error>");
    if (!stream) return json::parse(r->body)["choices"][0]["stop_reason"];
    json last;
    for (const std::string& e : sse_payloads(r->body)) {
      if (e == "[DONE]") continue;
      const json j = json::parse(e);
      if (!j["choices"][0]["finish_reason"].is_null()) last = j["choices"][0]["stop_reason"];
    }
    return last;
  };
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream);
    EXPECT_TRUE(reason("", stream).is_null());  // length
    EXPECT_EQ(reason(str_cat(R"(, "stop_token_ids": [)", forced, "]"), stream), forced);
    EXPECT_EQ(reason(", \"stop\": " + json(forced_text).dump(), stream), forced_text);
  }
}

}  // namespace
}  // namespace vtllm::server
