#include "bench/openai_client.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "bench/sse.h"

namespace vtllm::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

struct CompletionClient::Impl {
  explicit Impl(const std::string& base_url) : http(base_url) {}
  httplib::Client http;
};

CompletionClient::CompletionClient(CompletionParams params) : params_(std::move(params)) {
  const std::string& u = params_.base_url;
  VT_REQUIRE(u.rfind("http://", 0) == 0 || u.rfind("https://", 0) == 0, "--base-url '", u,
           "': expected http://host:port");
  VT_REQUIRE(u.find('/', u.find("//") + 2) == std::string::npos, "--base-url '", u,
           "': give the server root only; the path goes in --endpoint");
  VT_REQUIRE(!params_.endpoint.empty() && params_.endpoint.front() == '/', "--endpoint '",
           params_.endpoint, "': expected a path starting with '/'");
  VT_REQUIRE(params_.max_tokens > 0, "--output-len must be positive, got ", params_.max_tokens);
  impl_ = std::make_unique<Impl>(u);
  impl_->http.set_connection_timeout(10, 0);
  const auto timeout_us = int64_t(params_.timeout_s * 1e6);
  impl_->http.set_read_timeout(time_t(timeout_us / 1000000), time_t(timeout_us % 1000000));
  impl_->http.set_keep_alive(true);
  // Without it Nagle's algorithm can hold a request's body behind its headers until the
  // server's delayed ACK (~40 ms on Linux), which would land in every TTFT.
  impl_->http.set_tcp_nodelay(true);
}

CompletionClient::~CompletionClient() = default;

std::string CompletionClient::request_body(const Prompt& prompt) const {
  nlohmann::ordered_json j;
  if (!params_.model.empty()) j["model"] = params_.model;
  if (prompt.ids.empty()) {
    j["prompt"] = prompt.text;
  } else {
    j["prompt"] = prompt.ids;
  }
  j["max_tokens"] = params_.max_tokens;
  j["temperature"] = 0.0;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  if (params_.ignore_eos) j["ignore_eos"] = true;
  const nlohmann::ordered_json extra = nlohmann::ordered_json::parse(params_.extra_body);
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j.dump();
}

std::vector<int32_t> CompletionClient::tokenize(const std::string& text, bool llama) {
  nlohmann::json body;
  if (llama) {
    body["content"] = text;
  } else {
    body["prompt"] = text;
    body["add_special_tokens"] = false;
  }
  if (!params_.model.empty() && !llama) body["model"] = params_.model;
  httplib::Headers headers;
  if (!params_.api_key.empty()) headers.emplace("Authorization", "Bearer " + params_.api_key);
  auto r = impl_->http.Post("/tokenize", headers, body.dump(), "application/json");
  VT_CHECK(r, "POST /tokenize failed: ", httplib::to_string(r.error()));
  VT_CHECK(r->status == 200, "POST /tokenize: HTTP ", r->status, ": ", r->body.substr(0, 300));
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  VT_CHECK(!j.is_discarded() && j.contains("tokens") && j["tokens"].is_array(),
           "POST /tokenize: no \"tokens\" list in ", r->body.substr(0, 300));
  std::vector<int32_t> ids;
  for (const auto& t : j["tokens"]) {
    // llama.cpp with with_pieces answers objects; plain ids otherwise.
    ids.push_back(t.is_object() ? t["id"].get<int32_t>() : t.get<int32_t>());
  }
  return ids;
}

RequestTiming CompletionClient::run(const Prompt& prompt) {
  RequestTiming t;
  t.prompt_tokens = prompt.nominal_tokens;
  SseParser sse;
  std::optional<double> first, last;
  int64_t events = 0;
  std::optional<int64_t> usage_completion, usage_prompt;
  int status = 0;
  std::string error_body;
  bool done = false;      // saw data: [DONE]
  bool finished = false;  // saw a finish_reason (servers that omit [DONE] still end well)

  auto handle_event = [&](const std::string& data, double now) {
    if (data == "[DONE]") {
      done = true;
      return;
    }
    nlohmann::json j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      if (t.error.empty()) t.error = "unparsable stream chunk: " + data.substr(0, 200);
      return;
    }
    if (j.contains("error")) {
      // replace: a server's error can quote output that is not valid UTF-8.
      if (t.error.empty())
        t.error = "error in stream: " +
                  j["error"]
                      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      .substr(0, 300);
      return;
    }
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
      if (auto c = u->find("completion_tokens"); c != u->end() && c->is_number_integer())
        usage_completion = c->get<int64_t>();
      if (auto p = u->find("prompt_tokens"); p != u->end() && p->is_number_integer())
        usage_prompt = p->get<int64_t>();
      if (auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object())
        if (auto c = d->find("cached_tokens"); c != d->end() && c->is_number_integer())
          t.cached_tokens = c->get<int64_t>();
    }
    if (auto tm = j.find("timings"); tm != j.end() && tm->is_object() && t.cached_tokens < 0)
      if (auto c = tm->find("cache_n"); c != tm->end() && c->is_number_integer())
        t.cached_tokens = c->get<int64_t>();
    if (params_.keep_output) {
      // llama.cpp (return_tokens): the chunk's ids at the top level (/completion) or, on its
      // OpenAI endpoints with "verbose": true, under "__verbose"; vLLM's in the choice.
      auto take = [&](const nlohmann::json& obj, const char* key) {
        if (auto v = obj.find(key); v != obj.end() && v->is_array())
          for (const auto& id : *v)
            if (id.is_number_integer()) t.token_ids.push_back(id.get<int32_t>());
      };
      take(j, "tokens");
      if (auto v = j.find("__verbose"); v != j.end() && v->is_object()) take(*v, "tokens");
      if (auto ch = j.find("choices"); ch != j.end() && ch->is_array() && !ch->empty()) {
        take((*ch)[0], "token_ids");  // vLLM return_token_ids
        take((*ch)[0], "tokens");
        if (auto tx = (*ch)[0].find("text"); tx != (*ch)[0].end() && tx->is_string())
          t.text += tx->get<std::string>();
      }
    }
    auto ch = j.find("choices");
    if (ch == j.end() || !ch->is_array() || ch->empty()) return;
    const nlohmann::json& c0 = (*ch)[0];
    const bool has_text = c0.contains("text") && c0["text"].is_string() &&
                          !c0["text"].get_ref<const std::string&>().empty();
    const bool finishing = c0.contains("finish_reason") && !c0["finish_reason"].is_null();
    if (finishing) finished = true;
    if (!has_text && finishing) return;
    ++events;
    if (!first) {
      first = now;
    } else {
      t.itl_s.push_back(now - *last);
    }
    last = now;
  };

  httplib::Request req;
  req.method = "POST";
  req.path = params_.endpoint;
  req.body = request_body(prompt);
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  if (!params_.api_key.empty()) req.set_header("Authorization", "Bearer " + params_.api_key);
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  const Clock::time_point t0 = Clock::now();
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {
      if (error_body.size() < 1000) error_body.append(data, n);
      return true;
    }
    const double now = seconds_since(t0);
    for (const std::string& e : sse.feed(std::string_view(data, n))) handle_event(e, now);
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = impl_->http.send(req, res, err);
  const double end = seconds_since(t0);
  if (status == 200)
    for (const std::string& e : sse.finish()) handle_event(e, end);

  if (!sent) {
    t.error = "request failed: " + httplib::to_string(err);
    return t;
  }
  if (status != 200) {
    t.error = str_cat("HTTP ", status, ": ", error_body.substr(0, 300));
    return t;
  }
  if (!t.error.empty()) return t;
  if (!done && !finished) {
    t.error = "stream ended without a finish_reason or data: [DONE]";
    return t;
  }
  if (!first) {
    t.error = "stream carried no token";
    return t;
  }
  t.ok = true;
  t.ttft_s = *first;
  t.e2e_s = end;
  t.output_tokens = usage_completion.value_or(events);
  if (usage_prompt) t.prompt_tokens = *usage_prompt;
  return t;
}

}  // namespace vtllm::bench
