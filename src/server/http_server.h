// HttpServer: the OpenAI routes (HttpRoutes over an OpenAiService) on an
// event-driven HTTP/1.1 server (Boost.Asio, in http_server.cpp only).
//
// A few I/O threads own every socket; work that blocks (a generation waiting
// on the engine, tokenizing) runs on a WorkerPool, so an idle, slow or abusive
// connection costs a socket and a timer, not a thread. Per connection:
//   - keep-alive with in-order pipelining (up to max_pipelined requests at once);
//   - timeouts: keep_alive_timeout before a request's first byte, header_timeout
//     from its first byte to the end of its head (a client trickling header lines
//     is cut), body_timeout for its body, write_timeout for each write;
//   - limits: header bytes and count (431), target length (414), body bytes (413,
//     from the declared length or the chunked total, before reading the rest), a
//     malformed or negative Content-Length (400, at once);
//   - HTTP/1.0: no chunked responses (a stream ends by closing), close unless
//     "Connection: keep-alive";
//   - a client that goes away cancels its request at the engine's next step.
// Beyond max_connections a new connection is answered 503 and closed. bind()
// fails on a port another socket listens on (SO_REUSEADDR, never SO_REUSEPORT).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "server/http_message.h"
#include "server/http_routes.h"
#include "server/openai_service.h"

namespace vtllm::server {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;      // 0: any free port (see bind())
  std::string api_key;  // empty: no key needed
  HttpLimits limits;
  CorsConfig cors;
  int io_threads = 2;
  // Threads for the blocking routes; a generation holds one while it runs.
  int max_workers = 1100;
  int max_connections = 4096;
  int max_pipelined = 16;  // requests read ahead on one connection
  std::chrono::milliseconds keep_alive_timeout{5000};
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds body_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
  size_t stream_high_water = 256u << 10;  // bytes a stream may have waiting for its client
  // One line per response on stderr when it has been sent (or its client left): client
  // address, request line, status, milliseconds since the request was read.
  bool access_log = false;
};

class HttpServer {
 public:
  // `service` must outlive the server.
  HttpServer(HttpServerConfig config, OpenAiService& service);
  ~HttpServer();

  // Binds and listens; returns the port. Throws vtllm::Error naming host:port
  // and the reason (e.g. "Address already in use") when it cannot.
  int bind();
  // Serves until shutdown() has finished; blocks. Call bind() first.
  void serve();
  // Drains, from another thread than serve()'s: stops accepting, answers new
  // generation requests 503, lets those in flight run for at most
  // `drain_timeout`, then cancels the rest (a stream gets a final error event
  // and [DONE], a whole reply a 503), closes every connection and makes serve()
  // return. Returns how many requests the deadline cut.
  int shutdown(std::chrono::milliseconds drain_timeout);
  // Connections open now (tests).
  int open_connections() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Throws the error HttpServer::bind() would give for host:port, by listening
// there and closing again: lets `vtllm serve` fail before a slow model load.
void check_listen_address(const std::string& host, int port);

// SIGINT/SIGTERM handling without async-signal-unsafe handlers: block both in
// the calling thread before any other thread starts (threads inherit the mask),
// then wait_for_termination_signal() returns the signal that came, or 0 when
// `timeout` (negative: none) passed first.
void block_termination_signals();
int wait_for_termination_signal(std::chrono::milliseconds timeout = std::chrono::milliseconds(-1));

}  // namespace vtllm::server
