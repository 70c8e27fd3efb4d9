#include "server/http_server.h"

#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>

#include <cstdlib>
#include <thread>
#include <utility>

#include "server/auth.h"
#include "server/response.h"

namespace vtllm::server {

namespace {

constexpr int kListenBacklog = 1024;

void send(httplib::Response& res, const HttpReply& r) {
  res.status = r.status;
  res.set_content(r.body, r.content_type.c_str());
}

void send_error(httplib::Response& res, const ApiError& e) { send(res, error_reply(e)); }

// A generation reply: a whole body, or SSE frames pulled from the Generation.
void send_started(httplib::Response& res, OpenAiService::Started started) {
  if (!started.stream) {
    send(res, started.reply);
    return;
  }
  // The provider is a copyable std::function, so it shares the Generation; the
  // Generation dies with the response, which aborts it when unfinished.
  std::shared_ptr<Generation> gen(std::move(started.stream));
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [gen](size_t, httplib::DataSink& sink) {
    std::string frames;
    const bool more = gen->next_frames(frames);
    // A failed write means the client is gone: returning false closes the connection.
    if (!frames.empty() && !sink.write(frames.data(), frames.size())) return false;
    if (!more) sink.done();
    return true;
  });
}

}  // namespace

struct HttpServer::Impl {
  HttpServerConfig config;
  OpenAiService& service;
  httplib::Server http;
  bool bound = false;
  int listen_fd = -1;  // seen through the socket-options hook

  Impl(HttpServerConfig c, OpenAiService& s) : config(std::move(c)), service(s) { routes(); }

  void routes();
};

void HttpServer::Impl::routes() {
  const int threads = config.num_threads;
  // httplib owns the queue it gets from this factory (its API takes a raw pointer).
  http.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  http.set_payload_max_length(config.max_body_bytes);
  http.set_keep_alive_timeout(2);
  http.set_socket_options([this](socket_t fd) {
    httplib::default_socket_options(fd);
    listen_fd = fd;
  });

  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    try {
      if (path_needs_key(req.path))
        check_api_key(req.get_header_value("Authorization"), config.api_key);
      check_body_size(req.body.size(), config.max_body_bytes);
    } catch (const ApiError& e) {
      send_error(res, e);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Errors httplib answers itself (unknown route, body over the limit, bad
  // request line) get an OpenAI error object too; ours already have a body.
  const size_t limit = config.max_body_bytes;
  http.set_error_handler(httplib::Server::HandlerWithResponse([limit](const httplib::Request& req,
                                                                      httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 404) {
      send_error(res,
                 ApiError::not_found(str_cat("no route ", req.method, " ", req.path), "not_found"));
    } else if (res.status == 413) {
      send_error(
          res,
          ApiError::payload_too_large(
              size_t(std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10)),
              limit));
    } else {
      send_error(res, ApiError(res.status, "invalid_request_error",
                               str_cat("HTTP error ", res.status), "", ""));
    }
    return httplib::Server::HandlerResponse::Handled;
  }));

  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    send(res, service.health());
  });
  http.Get("/version", [this](const httplib::Request&, httplib::Response& res) {
    send(res, service.version());
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    send(res, service.metrics());
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    send(res, service.models());
  });
  http.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    send(res, service.tokenize(req.body));
  });
  http.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    send(res, service.detokenize(req.body));
  });
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    send_started(res, service.completions(req.body));
  });
  http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    send_started(res, service.chat_completions(req.body));
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        try {
          std::rethrow_exception(ep);
        } catch (const ApiError& e) {
          send_error(res, e);
        } catch (const std::exception& e) {
          send_error(res, ApiError::internal(e.what()));
        } catch (...) {
          send_error(res, ApiError::internal("unknown exception"));
        }
      });
}

HttpServer::HttpServer(HttpServerConfig config, OpenAiService& service)
    : impl_(std::make_unique<Impl>(std::move(config), service)) {}

HttpServer::~HttpServer() {
  if (impl_->http.is_running()) impl_->http.stop();
}

int HttpServer::bind() {
  Impl& s = *impl_;
  int port = s.config.port;
  if (port == 0) {
    port = s.http.bind_to_any_port(s.config.host);
  } else if (!s.http.bind_to_port(s.config.host, port)) {
    port = -1;
  }
  if (port < 0) VT_THROW("http server: cannot listen on ", s.config.host, ":", s.config.port);
  // Debian's libcpp-httplib listens with a backlog of 5, which drops connections
  // when many clients connect at once; listen() again raises it.
  if (s.listen_fd >= 0 && ::listen(s.listen_fd, kListenBacklog) != 0) {
    VT_THROW("http server: listen(", s.config.host, ":", port, ", backlog ", kListenBacklog,
             ") failed");
  }
  s.bound = true;
  return port;
}

void HttpServer::serve() {
  VT_CHECK(impl_->bound, "http server: serve() before bind()");
  impl_->http.listen_after_bind();
}

void HttpServer::shutdown(std::chrono::milliseconds drain_timeout) {
  impl_->service.begin_shutdown();
  const auto deadline = std::chrono::steady_clock::now() + drain_timeout;
  while (impl_->service.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  impl_->http.stop();
}

void block_termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_termination_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace vtllm::server
