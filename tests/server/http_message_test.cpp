#include "server/http_message.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "server/response_sink.h"

namespace vtllm::server {
namespace {

struct Want {
  std::string method, target;
  int version = 11;
  bool keep_alive = true;
  HttpHeaders headers;
  std::string body;
};

// A random request and its wire bytes: fields, then a body sent with
// Content-Length or in random chunks.
std::string random_request(std::mt19937& rng, Want& w) {
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  w.method = pick(2) ? "POST" : "GET";
  w.target = "/p" + std::to_string(pick(1000)) + (pick(2) ? "?q=" + std::to_string(pick(9)) : "");
  w.version = pick(4) ? 11 : 10;
  const bool close = pick(3) == 0;
  w.keep_alive = w.version == 11 ? !close : close;  // 1.0: "keep-alive" when `close` drew true
  std::string wire =
      w.method + " " + w.target + (w.version == 11 ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n");
  const int n = pick(12);
  for (int i = 0; i < n; ++i) {
    std::string value(size_t(pick(40)), 'a');
    for (char& c : value) c = char('a' + pick(26));
    w.headers.emplace_back("X-Field-" + std::to_string(i), value);
  }
  if (w.version == 11 && close) w.headers.emplace_back("Connection", "close");
  if (w.version == 10 && close) w.headers.emplace_back("Connection", "keep-alive");
  const int body_len = w.method == "POST" ? pick(300) : 0;
  for (int i = 0; i < body_len; ++i) w.body += char(pick(256));
  const bool chunked = w.method == "POST" && w.version == 11 && pick(2);
  if (chunked) {
    w.headers.emplace_back("Transfer-Encoding", "chunked");
  } else if (w.method == "POST") {
    w.headers.emplace_back("Content-Length", std::to_string(w.body.size()));
  }
  for (const auto& [k, v] : w.headers) wire += k + ": " + v + "\r\n";
  wire += "\r\n";
  if (!chunked) return wire + w.body;
  size_t at = 0;
  while (at < w.body.size()) {
    const size_t len = std::min(w.body.size() - at, size_t(1 + pick(64)));
    char hex[16];
    std::snprintf(hex, sizeof hex, "%zx", len);
    wire += std::string(hex) + "\r\n" + w.body.substr(at, len) + "\r\n";
    at += len;
  }
  return wire + "0\r\n\r\n";
}

TEST(HttpMessage, PipelinedRequestsSplitAnywhereParseAsGenerated) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Want> want(1 + rng() % 4);
    std::string wire;
    for (Want& w : want) wire += random_request(rng, w);
    // Feed in random pieces, keeping what was not consumed, as a connection does.
    HttpLimits limits;
    std::vector<HttpRequest> got;
    std::string pending;
    size_t at = 0;
    auto parser = std::make_unique<HttpRequestParser>(limits);
    while (at < wire.size() || !pending.empty()) {
      const size_t piece = std::min(wire.size() - at, size_t(1 + rng() % 50));
      pending += wire.substr(at, piece);
      at += piece;
      bool progress = true;
      while (progress && !pending.empty()) {
        const HttpRequestParser::Step s = parser->put(pending);
        ASSERT_NE(s.state, HttpRequestParser::State::kError) << parser->error_message();
        pending.erase(0, s.consumed);
        progress = s.state == HttpRequestParser::State::kComplete;
        if (progress) {
          got.push_back(parser->take());
          parser = std::make_unique<HttpRequestParser>(limits);
        }
      }
      if (at == wire.size() && !progress) break;
    }
    ASSERT_EQ(got.size(), want.size()) << "trial " << trial;
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE(str_cat("trial ", trial, " request ", i));
      EXPECT_EQ(got[i].method, want[i].method);
      EXPECT_EQ(got[i].target, want[i].target);
      EXPECT_EQ(got[i].path, want[i].target.substr(0, want[i].target.find('?')));
      EXPECT_EQ(got[i].version, want[i].version);
      EXPECT_EQ(got[i].keep_alive, want[i].keep_alive);
      EXPECT_EQ(got[i].headers, want[i].headers);
      EXPECT_EQ(got[i].body, want[i].body);
    }
  }
}

int status_of(const std::string& wire, HttpLimits limits) {
  HttpRequestParser p(limits);
  const HttpRequestParser::Step s = p.put(wire);
  if (s.state == HttpRequestParser::State::kComplete) return 200;
  if (s.state == HttpRequestParser::State::kError) return p.error_status();
  return 0;  // needs more
}

TEST(HttpMessage, BodyLimitIsExactForDeclaredAndChunkedLengths) {
  HttpLimits l;
  l.max_body_bytes = 100;
  const std::string head = "POST / HTTP/1.1\r\n";
  EXPECT_EQ(status_of(head + "Content-Length: 100\r\n\r\n" + std::string(100, 'x'), l), 200);
  // Refused from the head alone: no body byte was sent.
  EXPECT_EQ(status_of(head + "Content-Length: 101\r\n\r\n", l), 413);
  const std::string chunked = head + "Transfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(status_of(chunked + "32\r\n" + std::string(50, 'x') + "\r\n32\r\n" +
                          std::string(50, 'x') + "\r\n0\r\n\r\n",
                      l),
            200);
  // The second chunk's size line takes the total to 101: refused before its data.
  EXPECT_EQ(status_of(chunked + "32\r\n" + std::string(50, 'x') + "\r\n33\r\n", l), 413);
  EXPECT_EQ(status_of(head + "Content-Length: -1\r\n\r\n", l), 400);
  EXPECT_EQ(status_of(head + "Content-Length: 1\r\nContent-Length: 2\r\n\r\n", l), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.2\r\n\r\n", l), 400);
  EXPECT_EQ(status_of("GET / HTTP/2.0\r\n\r\n", l), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.0\r\n\r\n", l), 200);
  EXPECT_EQ(status_of("GARBAGE\r\n\r\n", l), 400);
}

TEST(HttpMessage, ResponseFraming) {
  EXPECT_EQ(response_head(404, {{"A", "b"}, {"Content-Length", "0"}}),
            "HTTP/1.1 404 Not Found\r\nA: b\r\nContent-Length: 0\r\n\r\n");
  std::string out;
  append_chunk(out, std::string(300, 'z'));
  append_chunk(out, "");
  EXPECT_EQ(out, "12c\r\n" + std::string(300, 'z') + "\r\n");
}

TEST(ResponseSink, AStreamWaitsAtTheHighWaterMarkAndAGoneClientUnblocksIt) {
  std::atomic<int> notified{0};
  ResponseSink::Options o;
  o.high_water = 1000;
  ResponseSink sink(o, [&] { ++notified; });
  sink.begin_stream(200, "text/event-stream");
  std::string taken;
  sink.take(taken);
  sink.written(taken.size());
  std::atomic<int> writes{0};
  std::thread producer([&] {
    for (int i = 0; i < 10; ++i) {
      if (!sink.write(std::string(400, 'a'))) break;
      ++writes;
    }
  });
  // 400-byte writes stop once 1000 bytes wait: after the third.
  for (int i = 0; i < 200 && writes < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(writes.load(), 3);
  std::string bytes;
  EXPECT_FALSE(sink.take(bytes));
  std::string three;
  for (int i = 0; i < 3; ++i) three += "190\r\n" + std::string(400, 'a') + "\r\n";
  EXPECT_EQ(bytes, three);
  sink.written(bytes.size());  // room again: three more go in
  for (int i = 0; i < 200 && writes < 6; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(writes.load(), 6);
  int gone_calls = 0;
  sink.on_gone([&] { ++gone_calls; });
  sink.abandon();  // the blocked producer returns false
  producer.join();
  EXPECT_EQ(writes.load(), 6);
  EXPECT_EQ(gone_calls, 1);
  sink.abandon();
  EXPECT_EQ(gone_calls, 1);
  EXPECT_GT(notified.load(), 0);
}

TEST(ResponseSink, Http10StreamsAreNotChunkedAndClose) {
  ResponseSink::Options o;
  o.version = 10;
  ResponseSink sink(o, nullptr);
  sink.begin_stream(200, "text/event-stream");
  sink.write("data: x\n\n");
  sink.end_stream();
  std::string bytes;
  EXPECT_TRUE(sink.take(bytes));
  EXPECT_TRUE(sink.close_after());
  EXPECT_EQ(bytes,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            "data: x\n\n");
}

}  // namespace
}  // namespace vtllm::server
