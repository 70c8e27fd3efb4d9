// The server under a hostile or careless client (issue 18's abuse suite): each
// test starts the whole server in-process on a loopback port, attacks it with
// raw sockets, and checks that it keeps answering others, cuts the attacker
// where the limits say, and leaks nothing (the engine's blocks, /metrics).
//
// Bounded: the counts are fixed, every read has a timeout, and the timeouts
// under test are set to a second or less, so the suite ends in seconds.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_server.h"

namespace vtllm::server {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::Client;
using testing::read_response;
using testing::Socket;
using testing::TestServer;
using testing::TestServerOptions;
using Clock = std::chrono::steady_clock;

// Hundreds of sockets on both ends need descriptors: take the hard limit.
// Returns whether `needed` descriptors are allowed.
bool raise_fd_limit(rlim_t needed) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return false;
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
  return r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= needed;
}

double metric(const std::string& page, const std::string& name, const std::string& label = "") {
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) == 0 && line.find(label) != std::string::npos)
      return std::stod(line.substr(line.rfind(' ') + 1));
  }
  ADD_FAILURE() << "no metric " << name << " " << label;
  return -1;
}

std::string metrics(TestServer& s) {
  auto r = s.client()->Get("/metrics");
  return r ? r->body : "";
}

// Waits, at most `bound`, until nothing runs and no KV block is held; returns the
// page ("" when the server stayed busy).
std::string wait_until_idle(TestServer& s, milliseconds bound = milliseconds(10000)) {
  std::string page;
  for (const auto end = Clock::now() + bound; Clock::now() < end;
       std::this_thread::sleep_for(milliseconds(10))) {
    // The page is read after the last generation is gone, so it holds every count that
    // generation made (a page read before could miss its finish).
    if (s.service().in_flight() != 0) continue;
    page = metrics(s);
    if (metric(page, "vtllm:num_requests_running") == 0 &&
        metric(page, "vtllm:num_requests_waiting") == 0 &&
        metric(page, "vtllm:kv_cache_blocks_used") == 0)
      break;
  }
  return page;
}

// A /health probe on a fresh connection: its latency, or a negative value on failure.
double health_latency_s(int port) {
  const auto t0 = Clock::now();
  Client c(port, milliseconds(3000));
  auto r = c.Get("/health");
  if (!r || r->status != 200) return -1;
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string post_request(const std::string& path, const std::string& body,
                         const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string expected_text(const TestServer& s, const std::string& prompt, int64_t max_tokens) {
  const auto ids = s.tokenizer().encode(prompt, true);
  return s.tokenizer().decode(testing::expected_ids(s.tokenizer(), ids, max_tokens), true);
}

TEST(HttpAbuse, SlowlorisConnectionsAreCutAtTheHeaderTimeoutAndOthersAreServed) {
  constexpr int kConns = 400;
  if (!raise_fd_limit(2 * kConns + 200)) GTEST_SKIP() << "too few file descriptors allowed";
  TestServerOptions o;
  o.http.header_timeout = milliseconds(800);
  TestServer s(o);
  std::vector<Socket> loris;
  for (int i = 0; i < kConns; ++i) {
    loris.emplace_back(s.port());
    ASSERT_TRUE(loris.back().ok()) << i;
    ASSERT_TRUE(loris.back().send_all("GET /health HTTP/1.1\r\nHost: x\r\n"));
  }
  // Trickle one header line per connection every 100 ms: each keeps sending,
  // so only the header deadline (from the first byte) can end it.
  const auto t0 = Clock::now();
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    for (int k = 0; !stop && k < 30; ++k) {
      for (Socket& l : loris) l.send_all("X-Trickle-" + std::to_string(k) + ": y\r\n");
      std::this_thread::sleep_for(milliseconds(100));
    }
  });
  for (int i = 0; i < 5; ++i) {
    const double t = health_latency_s(s.port());
    EXPECT_GE(t, 0) << "probe " << i << " failed while the slowloris ran";
    EXPECT_LT(t, 0.5) << "probe " << i;
    std::this_thread::sleep_for(milliseconds(50));
  }
  // By 2 s every trickling connection has been closed by the server.
  int closed = 0;
  for (Socket& l : loris) {
    const auto left =
        milliseconds(2500) - std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
    closed += l.closed_within(std::max(milliseconds(1), left));
  }
  stop = true;
  trickle.join();
  EXPECT_EQ(closed, kConns);
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), 0.7);
  for (int i = 0; i < 200 && s.http().open_connections() > 0; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(s.http().open_connections(), 0);
}

TEST(HttpAbuse, TwentyThousandHeadersAre431AndTheServerStaysHealthy) {
  TestServer s;
  std::string req = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 20000; ++i) req += "X-H" + std::to_string(i) + ": v\r\n";
  req += "\r\n";
  Socket sock(s.port());
  sock.send_all(req);  // the server may close before it is all sent
  std::string buf;
  auto r = read_response(sock, buf, milliseconds(5000));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "request_header_fields_too_large");
  EXPECT_EQ(r->get_header_value("Connection"), "close");
  EXPECT_TRUE(sock.closed_within(milliseconds(3000)));
  EXPECT_GE(health_latency_s(s.port()), 0);
}

TEST(HttpAbuse, HeaderCountAndSizeLimitsAreExact) {
  TestServerOptions o;
  o.http.limits.max_headers = 50;
  o.http.limits.max_header_bytes = 4096;
  TestServer s(o);
  auto status_with = [&](int count, size_t value_bytes) {
    std::string req = "GET /health HTTP/1.1\r\n";  // no Host: the count is exactly `count`
    for (int i = 0; i < count; ++i)
      req += "X-" + std::to_string(i) + ": " + std::string(value_bytes, 'v') + "\r\n";
    req += "\r\n";
    Socket sock(s.port());
    sock.send_all(req);
    std::string buf;
    auto r = read_response(sock, buf, milliseconds(3000));
    return r ? r->status : -1;
  };
  EXPECT_EQ(status_with(50, 1), 200);
  EXPECT_EQ(status_with(51, 1), 431);
  EXPECT_EQ(status_with(1, 3000), 200);
  EXPECT_EQ(status_with(1, 5000), 431);
  // A target over the limit is 414.
  Socket sock(s.port());
  sock.send_all("GET /" + std::string(20000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string buf;
  auto r = read_response(sock, buf, milliseconds(3000));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->status == 414 || r->status == 431) << r->status;
}

TEST(HttpAbuse, PipelinedRequestsGetTheirResponsesInOrder) {
  TestServerOptions o;
  o.step_time = std::chrono::microseconds(1000);
  TestServer s(o);
  // A slow generation first, then two quick requests: the answers still come in order.
  const std::string slow =
      json({{"prompt", "first"}, {"max_tokens", 40}, {"temperature", 0}}).dump();
  const std::string stream =
      json({{"prompt", "second"}, {"max_tokens", 5}, {"temperature", 0}, {"stream", true}}).dump();
  Socket sock(s.port());
  ASSERT_TRUE(sock.send_all(post_request("/v1/completions", slow) +
                            "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n" +
                            post_request("/v1/completions", stream)));
  std::string buf;
  auto a = read_response(sock, buf, milliseconds(10000));
  auto b = read_response(sock, buf, milliseconds(10000));
  auto c = read_response(sock, buf, milliseconds(10000));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(json::parse(a->body)["choices"][0]["text"], expected_text(s, "first", 40));
  EXPECT_EQ(b->status, 200);
  EXPECT_EQ(json::parse(b->body)["data"][0]["id"], "tiny");
  EXPECT_EQ(c->status, 200);
  EXPECT_TRUE(c->chunked);
  std::string text;
  size_t at = 0;
  while ((at = c->body.find("data: {", at)) != std::string::npos) {
    const size_t end = c->body.find("\n\n", at);
    text +=
        json::parse(c->body.substr(at + 6, end - at - 6))["choices"][0]["text"].get<std::string>();
    at = end;
  }
  EXPECT_EQ(text, expected_text(s, "second", 5));
  EXPECT_NE(c->body.find("data: [DONE]"), std::string::npos);
  // The connection stays usable.
  ASSERT_TRUE(sock.send_all("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto d = read_response(sock, buf, milliseconds(3000));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 200);
}

TEST(HttpAbuse, IdleConnectionsDoNotBlockOthersAndCloseAtTheKeepAliveTimeout) {
  constexpr int kConns = 500;
  if (!raise_fd_limit(2 * kConns + 200)) GTEST_SKIP() << "too few file descriptors allowed";
  TestServerOptions o;
  o.http.keep_alive_timeout = milliseconds(700);
  TestServer s(o);
  std::vector<Socket> idle;
  for (int i = 0; i < kConns; ++i) {
    idle.emplace_back(s.port());
    ASSERT_TRUE(idle.back().ok()) << i;
  }
  const auto t0 = Clock::now();
  for (int i = 0; i < 5; ++i) {
    const double t = health_latency_s(s.port());
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 0.5);
  }
  auto r = s.client()->Post("/v1/completions", R"({"prompt": "still serving", "max_tokens": 3})",
                            "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  int closed = 0;
  for (Socket& c : idle) closed += c.closed_within(milliseconds(2500));
  EXPECT_EQ(closed, kConns);
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), 0.6);
}

TEST(HttpAbuse, ConnectionsOverTheCapAre503) {
  TestServerOptions o;
  o.http.max_connections = 40;
  TestServer s(o);
  std::vector<Socket> held;
  for (int i = 0; i < 40; ++i) held.emplace_back(s.port());
  for (int i = 0; i < 200 && s.http().open_connections() < 40; ++i)
    std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(s.http().open_connections(), 40);
  Client over(s.port(), milliseconds(3000));
  auto r = over.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "too_many_connections");
  held.clear();
  for (int i = 0; i < 300 && s.http().open_connections() > 0; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_GE(health_latency_s(s.port()), 0);
}

// Sends `body` to /v1/completions; a stream is read until its first event, a
// whole request is given `wait` to start; then the connection is dropped.
void request_then_leave(int port, const std::string& body, bool stream, milliseconds wait,
                        bool reset) {
  Socket sock(port);
  if (!sock.send_all(post_request("/v1/completions", body))) return;
  std::string got;
  if (stream) {
    const auto end = Clock::now() + milliseconds(5000);
    while (got.find("data: ") == std::string::npos && Clock::now() < end)
      if (sock.recv_some(got, milliseconds(100)) == 0) break;
  } else {
    sock.recv_some(got, wait);
  }
  if (reset) sock.reset();
}

TEST(HttpAbuse, AThousandClientsThatLeaveAbortTheirRequestsAndLeakNothing) {
  TestServerOptions o;
  o.step_time = std::chrono::microseconds(300);
  TestServer s(o);
  constexpr int kClients = 1000;
  constexpr int kTokens = 400;
  constexpr int kPromptLen = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kClients; i += 16) {
        const bool stream = i % 2 == 0;
        // Prompts of kPromptLen ids: prompt_tokens_total / kPromptLen counts the
        // requests that reached the engine.
        const std::vector<int> prompt = {100 + i % 50, 200 + i % 7, 300, 400};
        const std::string body = json({{"prompt", prompt},
                                       {"max_tokens", kTokens},
                                       {"ignore_eos", true},
                                       {"stream", stream}})
                                     .dump();
        request_then_leave(s.port(), body, stream, milliseconds(15), /*reset=*/i % 3 == 0);
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::string page = wait_until_idle(s);
  EXPECT_EQ(metric(page, "vtllm:num_requests_running"), 0) << page;
  EXPECT_EQ(metric(page, "vtllm:num_requests_waiting"), 0);
  EXPECT_EQ(metric(page, "vtllm:kv_cache_blocks_used"), 0);
  EXPECT_EQ(metric(page, "vtllm:state_slots_used"), 0);
  EXPECT_EQ(s.service().in_flight(), 0);
  // Cut short, streaming or not: far from every request's 400 tokens, and every
  // request that reached the engine ended once, nearly all of them as aborted.
  const double started = metric(page, "vtllm:prompt_tokens_total") / kPromptLen;
  const double aborted = metric(page, "vtllm:request_success_total", "\"abort\"");
  const double ran_out = metric(page, "vtllm:request_success_total", "\"length\"");
  EXPECT_GE(started, 0.5 * kClients) << page;
  EXPECT_EQ(aborted + ran_out, started) << page;
  EXPECT_LE(ran_out, 0.05 * kClients) << page;
  EXPECT_LT(metric(page, "vtllm:generation_tokens_total"), 0.25 * kClients * kTokens);
  auto ok = s.client()->Post("/v1/completions", R"({"prompt": "still here", "max_tokens": 3})",
                             "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpAbuse, ANonStreamingRequestWhoseClientLeftStopsAtTheNextStep) {
  TestServerOptions o;
  o.step_time = std::chrono::microseconds(5000);
  TestServer s(o);
  const std::string body =
      json({{"prompt", "long"}, {"max_tokens", 400}, {"ignore_eos", true}}).dump();
  request_then_leave(s.port(), body, false, milliseconds(100), false);
  const auto t0 = Clock::now();
  const std::string page = wait_until_idle(s);
  // 400 steps would be 2 s; the abort lands within a few steps.
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);
  EXPECT_EQ(metric(page, "vtllm:request_success_total", "\"abort\""), 1);
  EXPECT_EQ(metric(page, "vtllm:request_success_total", "\"length\""), 0);
  EXPECT_GT(metric(page, "vtllm:generation_tokens_total"), 0);
  EXPECT_LT(metric(page, "vtllm:generation_tokens_total"), 200);
}

TEST(HttpAbuse, ABusyPortIsAnErrorEvenForASocketWithReusePort) {
  TestServer s;
  // Another listener with SO_REUSEPORT on the same port: a server that set
  // SO_REUSEPORT too would share the port with it.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int reuse_port = ntohs(addr.sin_port);
  for (const int port : {s.port(), reuse_port}) {
    HttpServerConfig hc;
    hc.port = port;
    HttpServer second(hc, s.service());
    try {
      second.bind();
      ADD_FAILURE() << "a second server bound busy port " << port;
    } catch (const vtllm::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << msg;
      EXPECT_NE(msg.find("in use"), std::string::npos) << msg;
    }
  }
  ::close(fd);
  EXPECT_GE(health_latency_s(s.port()), 0);
}

TEST(HttpAbuse, BadLengthsAreAnsweredAtOnce) {
  TestServerOptions o;
  o.max_body_bytes = 100000;
  TestServer s(o);
  auto answer = [&](const std::string& head, const std::string& body_part) {
    Socket sock(s.port());
    sock.send_all(head + body_part);
    std::string buf;
    const auto t0 = Clock::now();
    auto r = read_response(sock, buf, milliseconds(3000));
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_LT(t, 0.5) << head;
    return r ? r->status : -1;
  };
  const std::string post = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n";
  EXPECT_EQ(answer(post + "Content-Length: -5\r\n\r\n", ""), 400);
  EXPECT_EQ(answer(post + "Content-Length: abc\r\n\r\n", ""), 400);
  EXPECT_EQ(answer(post + "Content-Length: 99999999999\r\n\r\n", ""), 413);
  EXPECT_EQ(answer(post + "Content-Length: 100001\r\n\r\n", "{"), 413);
  EXPECT_EQ(answer(post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", ""), 400);
  // Chunked: refused once the total passes the limit, while more is still to come.
  std::string chunks;
  for (int i = 0; i < 3; ++i) chunks += "8000\r\n" + std::string(0x8000, 'a') + "\r\n";
  chunks += "8000\r\n";
  EXPECT_EQ(answer(post + "Transfer-Encoding: chunked\r\n\r\n", chunks), 413);
  // A POST with no body at all reaches the route (invalid JSON), with a code.
  Client c(s.port());
  auto r = c.request("POST", "/v1/completions", "", {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_json");
}

TEST(HttpAbuse, ABodyTooSlowIsCutAtTheBodyTimeout) {
  TestServerOptions o;
  o.http.body_timeout = milliseconds(500);
  TestServer s(o);
  Socket sock(s.port());
  sock.send_all("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"pr");
  const auto t0 = Clock::now();
  EXPECT_TRUE(sock.closed_within(milliseconds(3000)));
  const double t = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GT(t, 0.4);
  EXPECT_LT(t, 2.0);
}

TEST(HttpAbuse, MethodsHttp10AndCors) {
  TestServer s;
  Client c(s.port());
  auto r = c.request("POST", "/health", "{}", {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD");
  r = c.Get("/v1/completions");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  r = c.request("HEAD", "/version", "", {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_GT(std::stoi(r->get_header_value("Content-Length")), 0);
  // CORS (vLLM's default: any origin).
  r = c.request("OPTIONS", "/v1/completions", "",
                {{"Origin", "http://a.example"},
                 {"Access-Control-Request-Method", "POST"},
                 {"Access-Control-Request-Headers", "content-type, authorization"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Headers"), "content-type, authorization");
  EXPECT_NE(r->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  r = c.Get("/v1/models", {{"Origin", "http://a.example"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "*");
  // HTTP/1.0: a stream is not chunked and ends by closing; a reply closes unless keep-alive.
  Socket sock(s.port());
  const std::string body = json({{"prompt", "old"}, {"max_tokens", 4}, {"stream", true}}).dump();
  std::string req = post_request("/v1/completions", body);
  req.replace(req.find("HTTP/1.1"), 8, "HTTP/1.0");
  sock.send_all(req);
  std::string buf;
  auto old = read_response(sock, buf, milliseconds(5000));
  ASSERT_TRUE(old);
  EXPECT_EQ(old->status, 200);
  EXPECT_FALSE(old->chunked);
  EXPECT_FALSE(old->has_header("Content-Length"));
  EXPECT_NE(old->body.find("data: [DONE]"), std::string::npos);
  Socket ka(s.port());
  ka.send_all(
      "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /version HTTP/1.0\r\n\r\n");
  std::string kb;
  auto h1 = read_response(ka, kb, milliseconds(3000));
  auto h2 = read_response(ka, kb, milliseconds(3000));
  ASSERT_TRUE(h1 && h2);
  EXPECT_EQ(h1->get_header_value("Connection"), "keep-alive");
  EXPECT_EQ(h2->get_header_value("Connection"), "close");
  EXPECT_TRUE(ka.closed_within(milliseconds(3000)));
}

TEST(HttpAbuse, AClientThatDoesNotReadItsStreamIsCutAtTheWriteTimeout) {
  TestServerOptions o;
  o.step_time = std::chrono::microseconds(200);
  o.http.write_timeout = milliseconds(500);
  o.http.stream_high_water = 16u << 10;
  o.max_model_len = 4096;
  o.max_num_seqs = 8;
  TestServer s(o);
  Socket sock(s.port());
  // A small receive buffer, and no reads: the server's writes stall.
  const int small = 4096;
  ::setsockopt(sock.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  const std::string body = json({{"prompt", "flood"},
                                 {"max_tokens", 4000},
                                 {"ignore_eos", true},
                                 {"logprobs", 20},
                                 {"n", 8},
                                 {"stream", true}})
                               .dump();
  // 8 x 4000 tokens of ~1 KB each: far more than the socket buffers hold.
  ASSERT_TRUE(sock.send_all(post_request("/v1/completions", body)));
  std::this_thread::sleep_for(milliseconds(200));
  // The cut comes once the server's socket buffer is full, which takes more steps
  // on a loaded machine (or a larger tcp_wmem) than on a quiet one: wait long.
  const std::string page = wait_until_idle(s, milliseconds(90000));
  ASSERT_FALSE(page.empty()) << "the stream was not cut within 90 s";
  EXPECT_EQ(metric(page, "vtllm:request_success_total", "\"abort\""), 1) << page;
  EXPECT_LT(metric(page, "vtllm:generation_tokens_total"), 8 * 4000);
  EXPECT_EQ(metric(page, "vtllm:kv_cache_blocks_used"), 0);
}

// SIGTERM to a thread that waits for it, as `vtllm serve` does, with streams in
// flight: the short ones finish, the long ones are ended at the drain limit with
// an error event, and the listener is closed.
TEST(HttpAbuse, SigtermUnderLoadDrainsThenCutsWithAFinalEvent) {
  TestServerOptions o;
  o.step_time = std::chrono::microseconds(1000);
  o.max_model_len = 4096;
  TestServer s(o);
  constexpr int kShort = 8, kLong = 8;
  std::vector<std::string> bodies(kShort + kLong);
  std::vector<int> statuses(kShort + kLong, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kShort + kLong; ++i) {
    clients.emplace_back([&, i] {
      const bool is_long = i >= kShort;
      const bool stream = i % 2 == 0;
      const std::string body = json({{"prompt", "drain " + std::to_string(i)},
                                     {"max_tokens", is_long ? 4000 : 30},
                                     {"temperature", 0},
                                     {"ignore_eos", true},
                                     {"stream", stream}})
                                   .dump();
      Client c(s.port(), milliseconds(20000));
      auto r = c.Post("/v1/completions", body, "application/json");
      if (r) {
        statuses[i] = r->status;
        bodies[i] = r->body;
      }
    });
  }
  for (int i = 0; i < 500 && s.service().in_flight() < kShort + kLong; ++i)
    std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(s.service().in_flight(), kShort + kLong);  // no ASSERT: the clients must be joined
  std::atomic<int> got{0}, cut{-1};
  // The waiter starts with SIGTERM blocked (it inherits this thread's mask), so
  // the signal stays pending for it whenever it comes.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  std::thread waiter([&] {
    got = wait_for_termination_signal(milliseconds(5000));
    if (got) cut = s.stop(milliseconds(600));
  });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(pthread_kill(waiter.native_handle(), SIGTERM), 0);
  waiter.join();
  for (auto& c : clients) c.join();
  EXPECT_EQ(got.load(), SIGTERM);
  EXPECT_EQ(cut.load(), kLong);
  for (int i = 0; i < kShort + kLong; ++i) {
    SCOPED_TRACE(i);
    const bool is_long = i >= kShort, stream = i % 2 == 0;
    if (!is_long) {
      EXPECT_EQ(statuses[i], 200);
      if (stream) {
        EXPECT_NE(bodies[i].find("\"finish_reason\":\"length\""), std::string::npos);
      } else {
        EXPECT_EQ(json::parse(bodies[i])["choices"][0]["text"],
                  expected_text(s, "drain " + std::to_string(i), 30));
      }
    } else if (stream) {
      EXPECT_EQ(statuses[i], 200);
      EXPECT_NE(bodies[i].find("\"code\":\"shutting_down\""), std::string::npos) << bodies[i];
      EXPECT_EQ(bodies[i].rfind("data: [DONE]\n\n"), bodies[i].size() - 14);
    } else {
      EXPECT_EQ(statuses[i], 503);
      EXPECT_EQ(json::parse(bodies[i])["error"]["code"], "shutting_down");
    }
  }
  Socket after(s.port());
  EXPECT_FALSE(after.ok()) << "the listener is still open";
}

}  // namespace
}  // namespace vtllm::server
