// HttpServer: the OpenAI routes of an OpenAiService over HTTP/1.1 (cpp-httplib),
// with the API key, the body-size limit, SSE streaming with disconnect
// detection, a fixed pool of worker threads and a draining shutdown.
//
// Routes: POST /v1/completions, POST /v1/chat/completions, GET /v1/models,
// GET /health, GET /version, GET /metrics, POST /tokenize, POST /detokenize.
// Every error is an OpenAI error object. A streaming client that goes away is
// noticed at the next write; its Generation is then destroyed, which aborts the
// request, and the engine frees its blocks at its next step.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "server/openai_service.h"

namespace vtllm::server {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;      // 0: any free port (see bind())
  std::string api_key;  // empty: no key needed
  size_t max_body_bytes = 32u << 20;
  // Worker threads; a streaming request holds one for its whole duration.
  int num_threads = 64;
};

class HttpServer {
 public:
  // `service` must outlive the server.
  HttpServer(HttpServerConfig config, OpenAiService& service);
  ~HttpServer();

  // Binds the listening socket; returns the port. Throws vtllm::Error naming
  // host:port when it cannot.
  int bind();
  // Serves until shutdown(); blocks. Call bind() first.
  void serve();
  // Drains: new generation requests get 503, those in flight run to their end
  // (for at most `drain_timeout`), then the listener stops and serve() returns.
  void shutdown(std::chrono::milliseconds drain_timeout);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// SIGINT/SIGTERM handling without async-signal-unsafe handlers: block both in
// the calling thread before any other thread starts (threads inherit the mask),
// then wait_for_termination_signal() returns the signal that came.
void block_termination_signals();
int wait_for_termination_signal();

}  // namespace vtllm::server
