#include "server/http_routes.h"

#include <algorithm>
#include <utility>

#include "server/auth.h"

namespace vtllm::server {

namespace {

enum class Kind {
  kHealth,
  kVersion,
  kMetrics,
  kModels,
  kTokenize,
  kDetokenize,
  kCompletions,
  kChat
};

struct Route {
  std::string_view path;
  bool post;  // else GET (and HEAD)
  Kind kind;
};

constexpr Route kRoutes[] = {
    {"/health", false, Kind::kHealth},
    {"/version", false, Kind::kVersion},
    {"/metrics", false, Kind::kMetrics},
    {"/v1/models", false, Kind::kModels},
    {"/tokenize", true, Kind::kTokenize},
    {"/detokenize", true, Kind::kDetokenize},
    {"/v1/completions", true, Kind::kCompletions},
    {"/v1/chat/completions", true, Kind::kChat},
};

// Starlette's expansion of allow_methods=["*"].
constexpr const char* kAllMethods = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT";

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return out;
}

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

void send_reply(ResponseSink& sink, const HttpReply& r, const HttpHeaders& extra, bool close) {
  sink.reply(r.status, r.content_type, r.body, extra, close);
}

HttpRoutes::HttpRoutes(std::string api_key, CorsConfig cors, OpenAiService& service,
                       WorkerPool& pool)
    : api_key_(std::move(api_key)), cors_(std::move(cors)), service_(service), pool_(pool) {}

bool HttpRoutes::origin_allowed(std::string_view origin) const {
  return contains(cors_.allowed_origins, "*") || contains(cors_.allowed_origins, origin);
}

HttpHeaders HttpRoutes::response_headers(const HttpRequest& req) const {
  HttpHeaders h;
  const std::string_view origin = req.header("Origin");
  if (cors_.allowed_origins.empty() || origin.empty()) return h;
  const bool any = contains(cors_.allowed_origins, "*");
  // As Starlette: "*" unless the origin must be named (a specific list, or cookies sent).
  if (any && req.header("Cookie").empty()) {
    h.emplace_back("Access-Control-Allow-Origin", "*");
  } else if (origin_allowed(origin)) {
    h.emplace_back("Access-Control-Allow-Origin", std::string(origin));
    h.emplace_back("Vary", "Origin");
  }
  if (cors_.allow_credentials) h.emplace_back("Access-Control-Allow-Credentials", "true");
  return h;
}

void HttpRoutes::preflight(const HttpRequest& req, ResponseSink& sink) const {
  // The sink already carries response_headers(); these are the preflight's own.
  HttpHeaders h;
  const bool any_method = contains(cors_.allowed_methods, "*");
  const bool any_header = contains(cors_.allowed_headers, "*");
  h.emplace_back("Access-Control-Allow-Methods",
                 any_method ? kAllMethods : join(cors_.allowed_methods));
  h.emplace_back("Access-Control-Max-Age", "600");
  std::vector<std::string> failures;
  if (!origin_allowed(req.header("Origin"))) failures.emplace_back("origin");
  const std::string method(req.header("Access-Control-Request-Method"));
  if (!any_method && !contains(cors_.allowed_methods, method)) failures.emplace_back("method");
  const std::string_view asked = req.header("Access-Control-Request-Headers");
  if (any_header) {
    if (!asked.empty()) h.emplace_back("Access-Control-Allow-Headers", std::string(asked));
  } else {
    std::vector<std::string> allowed = {"accept", "accept-language", "content-language",
                                        "content-type"};
    for (const std::string& a : cors_.allowed_headers) allowed.push_back(lower(a));
    h.emplace_back("Access-Control-Allow-Headers", join(cors_.allowed_headers));
    size_t at = 0;
    while (at <= asked.size() && !asked.empty()) {
      const size_t comma = std::min(asked.find(',', at), asked.size());
      const std::string name = lower(trim(asked.substr(at, comma - at)));
      if (!name.empty() && !contains(allowed, name)) {
        failures.emplace_back("headers");
        break;
      }
      at = comma + 1;
    }
  }
  if (!failures.empty()) {
    sink.reply(400, "text/plain; charset=utf-8", "Disallowed CORS " + join(failures), h);
  } else {
    sink.reply(200, "text/plain; charset=utf-8", "OK", h);
  }
}

void HttpRoutes::handle(HttpRequest req, std::shared_ptr<ResponseSink> sink) {
  try {
    const bool is_preflight = req.method == "OPTIONS" && !cors_.allowed_origins.empty() &&
                              !req.header("Origin").empty() &&
                              !req.header("Access-Control-Request-Method").empty();
    if (is_preflight) return preflight(req, *sink);
    if (path_needs_key(req.path)) check_api_key(req.header("Authorization"), api_key_);
    const Route* route = nullptr;
    for (const Route& r : kRoutes)
      if (r.path == req.path) route = &r;
    if (!route) {
      throw ApiError::not_found(str_cat("no route ", req.method, " ", req.path), "not_found");
    }
    const bool get = req.method == "GET" || req.method == "HEAD";
    if (route->post ? req.method != "POST" : !get) {
      const ApiError e(405, "invalid_request_error",
                       str_cat("method ", req.method, " is not allowed on ", req.path), "",
                       "method_not_allowed");
      send_reply(*sink, error_reply(e), {{"Allow", route->post ? "POST" : "GET, HEAD"}});
      return;
    }
    switch (route->kind) {
      case Kind::kHealth:
        return send_reply(*sink, service_.health());
      case Kind::kVersion:
        return send_reply(*sink, service_.version());
      case Kind::kMetrics:
        return send_reply(*sink, service_.metrics());
      case Kind::kModels:
        return send_reply(*sink, service_.models());
      case Kind::kTokenize:
      case Kind::kDetokenize:
      case Kind::kCompletions:
      case Kind::kChat:
        break;
    }
    const Kind kind = route->kind;
    pool_.submit([this, kind, body = std::move(req.body), sink = std::move(sink)] {
      if (sink->gone()) return;
      try {
        if (kind == Kind::kTokenize) return send_reply(*sink, service_.tokenize(body));
        if (kind == Kind::kDetokenize) return send_reply(*sink, service_.detokenize(body));
        run_generation(kind == Kind::kChat, body, *sink);
      } catch (const std::exception& e) {
        // Only a bug gets here; a stream already started ends with the connection.
        sink->clear_on_gone();
        if (sink->started()) return sink->fail();
        send_reply(*sink, error_reply(ApiError::internal(e.what())), {}, /*close=*/true);
      }
    });
  } catch (const ApiError& e) {
    send_reply(*sink, error_reply(e));
  }
}

void HttpRoutes::run_generation(bool chat, const std::string& body, ResponseSink& sink) {
  OpenAiService::Started started =
      chat ? service_.chat_completions(body) : service_.completions(body);
  if (!started.gen) return send_reply(sink, started.reply);
  std::shared_ptr<Generation> gen = std::move(started.gen);
  // The client going away ends the request at the engine's next step.
  sink.on_gone([gen] { gen->cancel(); });
  if (!gen->streaming()) {
    const HttpReply reply = service_.finish(*gen);
    sink.clear_on_gone();
    return send_reply(sink, reply);
  }
  sink.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
  std::string frames;
  for (bool more = true; more;) {
    frames.clear();
    more = gen->next_frames(frames);
    // A gone client drops the frames; the cancel above makes the loop end soon.
    sink.write(frames);
  }
  sink.clear_on_gone();
  sink.end_stream();
}

}  // namespace vtllm::server
