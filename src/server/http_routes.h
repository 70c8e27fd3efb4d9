// HttpRoutes: what the server does with one parsed request: CORS (as vLLM's
// Starlette middleware), the API key, the route table (404 for an unknown
// path, 405 with Allow for a known path and another method), then the route.
//
// Cheap routes (/health, /version, /metrics, /v1/models) answer on the calling
// (I/O) thread; the body routes run on the WorkerPool: tokenizing, and a
// generation waiting on the engine, whose SSE frames are written as the engine
// produces them. A client that goes away cancels its generation (streaming or
// not) through the sink's on_gone.
//
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/http_message.h"
#include "server/openai_service.h"
#include "server/response_sink.h"
#include "server/worker_pool.h"

namespace vtllm::server {

// As vLLM's --allowed-origins, --allowed-methods, --allowed-headers,
// --allow-credentials (Starlette's CORSMiddleware). "*" allows any.
struct CorsConfig {
  std::vector<std::string> allowed_origins = {"*"};  // empty: no CORS headers at all
  std::vector<std::string> allowed_methods = {"*"};
  std::vector<std::string> allowed_headers = {"*"};
  bool allow_credentials = false;
};

class HttpRoutes {
 public:
  // `service` and `pool` must outlive the routes.
  HttpRoutes(std::string api_key, CorsConfig cors, OpenAiService& service, WorkerPool& pool);

  // Headers every response to `req` carries (CORS for an allowed Origin).
  HttpHeaders response_headers(const HttpRequest& req) const;
  // Answers `req` into `sink`, now or from a worker thread.
  void handle(HttpRequest req, std::shared_ptr<ResponseSink> sink);

 private:
  bool origin_allowed(std::string_view origin) const;
  void preflight(const HttpRequest& req, ResponseSink& sink) const;
  void run_generation(bool chat, const std::string& body, ResponseSink& sink);

  std::string api_key_;
  CorsConfig cors_;
  OpenAiService& service_;
  WorkerPool& pool_;
};

// Sends `r` (status, content type, body) into `sink`.
void send_reply(ResponseSink& sink, const HttpReply& r, const HttpHeaders& extra = {},
                bool close = false);

}  // namespace vtllm::server
