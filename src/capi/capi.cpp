// The C API (include/vtllm.h) over engine::build_engine, engine::AsyncEngine and
// server::OpenAiService: every entry point catches everything and turns it into a
// return code plus the thread's last error.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/error.h"
#include "base/version.h"
#include "capi/engine_options.h"
#include "engine/async_engine.h"
#include "engine/engine_builder.h"
#include "server/api_error.h"
#include "server/openai_service.h"
#include "server/response.h"
#include "vtllm.h"

using vtllm::server::ApiError;

struct vtllm_engine {
  // Declaration order is teardown order reversed: the service goes first, the parts
  // (tokenizer, chat template) the others point into go last.
  vtllm::engine::EngineParts parts;
  std::unique_ptr<vtllm::engine::AsyncEngine> engine;
  std::unique_ptr<vtllm::server::OpenAiService> service;

  // Requests in flight that carried a request_id, for vtllm_abort.
  struct InFlight {
    vtllm::server::Generation* gen = nullptr;  // null until the request started
    bool cancelled = false;                    // vtllm_abort came before it started
  };
  std::mutex mu;
  std::unordered_map<std::string, InFlight> in_flight;
};

namespace {

thread_local std::string t_last_error;

int fail(int code, std::string message) {
  t_last_error = std::move(message);
  return code;
}

// Request calls report failures as the server's error body.
int fail_request(int code, const ApiError& e) { return fail(code, vtllm::server::error_body(e)); }

int code_of_status(int status) {
  if (status == 503) return VTLLM_ERR_UNAVAILABLE;
  if (status >= 400 && status < 500) return VTLLM_ERR_INVALID_REQUEST;
  return VTLLM_ERR_INTERNAL;
}

char* copy_out(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

enum class Call { kComplete, kChat, kStream };

// What the C API reads from a body before the service parses it.
struct Prepared {
  std::string body;               // what the service gets
  bool chat = false;              // the route
  std::optional<std::string> id;  // request_id
};

// A body that is not a JSON object passes through unchanged: the service answers it
// with the server's own 400.
Prepared prepare(Call call, const char* request_json) {
  Prepared p{request_json, call == Call::kChat, std::nullopt};
  nlohmann::json j = nlohmann::json::parse(p.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return p;
  if (auto it = j.find("request_id"); it != j.end() && !it->is_null()) {
    if (!it->is_string())
      throw ApiError::bad_request("request_id", "'request_id' must be a string", "invalid_type");
    p.id = it->get<std::string>();
  }
  const auto stream = j.find("stream");
  const bool streaming = stream != j.end() && stream->is_boolean() && stream->get<bool>();
  if (call == Call::kStream) {
    p.chat = j.contains("messages");
    // A "stream" of the wrong type stays, for the server's 400 naming it.
    if (!streaming && (stream == j.end() || stream->is_null() || stream->is_boolean())) {
      j["stream"] = true;
      p.body = j.dump();
    }
  } else if (streaming) {
    throw ApiError::bad_request("stream", "'stream': true needs vtllm_stream", "unsupported");
  }
  return p;
}

// Holds a request_id in the engine's table while the call runs.
class Registration {
 public:
  Registration(vtllm_engine& e, std::optional<std::string> id) : e_(e), id_(std::move(id)) {
    if (!id_) return;
    std::lock_guard lock(e_.mu);
    if (!e_.in_flight.emplace(*id_, vtllm_engine::InFlight{}).second) {
      id_.reset();
      throw ApiError::bad_request("request_id", "a request with this request_id is in flight",
                                  "duplicate_request_id");
    }
  }
  ~Registration() {
    if (!id_) return;
    std::lock_guard lock(e_.mu);
    e_.in_flight.erase(*id_);
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

  // The request started: vtllm_abort cancels `g` from now on.
  void started(vtllm::server::Generation* g) {
    if (!id_) return;
    std::lock_guard lock(e_.mu);
    vtllm_engine::InFlight& f = e_.in_flight.at(*id_);
    f.gen = g;
    if (f.cancelled) g->cancel();
  }

 private:
  vtllm_engine& e_;
  std::optional<std::string> id_;
};

// Calls `cb` with each "data: X\n\n" payload in `frames`; false once cb asked to stop.
bool deliver(std::string_view frames, vtllm_stream_fn cb, void* user, bool& saw_error) {
  constexpr std::string_view kData = "data: ", kEnd = "\n\n";
  while (!frames.empty()) {
    const size_t end = frames.find(kEnd);
    std::string_view event = frames.substr(0, end);
    frames = end == std::string_view::npos ? std::string_view() : frames.substr(end + kEnd.size());
    if (event.substr(0, kData.size()) != kData) continue;
    const std::string payload(event.substr(kData.size()));
    if (payload.rfind("{\"error\"", 0) == 0) {
      saw_error = true;
      t_last_error = payload;
    }
    if (cb(payload.c_str(), user) != 0) return false;
  }
  return true;
}

int run_request(vtllm_engine* e, Call call, const char* request_json, char** response_json,
                vtllm_stream_fn cb, void* user) {
  try {
    if (response_json) *response_json = nullptr;
    if (!e || !request_json || (call == Call::kStream ? !cb : !response_json)) {
      return fail_request(
          VTLLM_ERR_INVALID_ARGUMENT,
          ApiError::bad_request("", "a required argument is NULL", "null_argument"));
    }
    Prepared p = prepare(call, request_json);
    std::shared_ptr<vtllm::server::Generation> gen;  // outlives `reg`: vtllm_abort may use it
    Registration reg(*e, std::move(p.id));
    vtllm::server::OpenAiService::Started s =
        p.chat ? e->service->chat_completions(p.body) : e->service->completions(p.body);
    gen = std::move(s.gen);
    if (!gen) return fail(code_of_status(s.reply.status), std::move(s.reply.body));  // refused
    reg.started(gen.get());
    if (!gen->streaming()) {
      vtllm::server::HttpReply r = e->service->finish(*gen);
      if (r.status != 200) return fail(code_of_status(r.status), std::move(r.body));
      *response_json = copy_out(r.body);
      return VTLLM_OK;
    }
    bool saw_error = false;
    std::string frames;
    for (bool more = true; more;) {
      frames.clear();
      more = gen->next_frames(frames);
      if (!deliver(frames, cb, user, saw_error)) break;  // destroying `gen` aborts it
    }
    return saw_error ? VTLLM_ERR_INTERNAL : VTLLM_OK;
  } catch (const ApiError& err) {
    return fail_request(code_of_status(err.status()), err);
  } catch (const std::bad_alloc&) {
    return fail_request(VTLLM_ERR_INTERNAL, ApiError::internal("out of memory"));
  } catch (const std::exception& err) {
    return fail_request(VTLLM_ERR_INTERNAL, ApiError::internal(err.what()));
  } catch (...) {
    return fail_request(VTLLM_ERR_INTERNAL, ApiError::internal("unknown exception"));
  }
}

}  // namespace

extern "C" {

int vtllm_abi_version(void) { return VTLLM_ABI_VERSION; }

const char* vtllm_version(void) { return vtllm::version(); }

int vtllm_engine_create(const char* model_dir, const char* options_json, vtllm_engine** out) {
  try {
    if (out) *out = nullptr;
    if (!model_dir || !out)
      return fail(VTLLM_ERR_INVALID_ARGUMENT,
                  "vtllm_engine_create: model_dir and out are required");
    vtllm::capi::EngineOptions opts;
    try {
      opts = vtllm::capi::parse_engine_options(model_dir, options_json ? options_json : "");
    } catch (const std::exception& err) {
      return fail(VTLLM_ERR_INVALID_ARGUMENT, err.what());
    }
    auto e = std::make_unique<vtllm_engine>();
    try {
      e->parts = vtllm::engine::build_engine(opts.args);
      VT_REQUIRE(e->parts.tokenizer, "no tokenizer: ", e->parts.tokenizer_error);
    } catch (const std::exception& err) {
      return fail(VTLLM_ERR_MODEL_LOAD,
                  vtllm::str_cat("cannot load the model in '", model_dir, "': ", err.what()));
    }
    vtllm::engine::EngineParts& parts = e->parts;
    e->engine = std::make_unique<vtllm::engine::AsyncEngine>(parts.engine, std::move(parts.runner),
                                                             &*parts.tokenizer);
    vtllm::server::ServiceConfig sc;
    sc.model_name = opts.served_model_name;
    sc.model_root = model_dir;
    sc.max_model_len = parts.engine.scheduler.max_model_len;
    sc.sampling_defaults =
        vtllm::server::SamplingDefaults::from_generation_config(parts.generation_config);
    vtllm::server::ChatRenderer render;
    if (parts.chat_template) {
      const vtllm::ChatTemplate* t = &*parts.chat_template;
      render = [t](const std::string& req) { return t->render_request(req); };
    }
    e->service = std::make_unique<vtllm::server::OpenAiService>(sc, *e->engine, *parts.tokenizer,
                                                                std::move(render));
    *out = e.release();
    return VTLLM_OK;
  } catch (const std::bad_alloc&) {
    return fail(VTLLM_ERR_INTERNAL, "vtllm_engine_create: out of memory");
  } catch (const std::exception& err) {
    return fail(VTLLM_ERR_INTERNAL, err.what());
  } catch (...) {
    return fail(VTLLM_ERR_INTERNAL, "vtllm_engine_create: unknown exception");
  }
}

void vtllm_engine_destroy(vtllm_engine* engine) {
  try {
    delete engine;
  } catch (...) {
    // A destructor that throws has nowhere to report to: the engine is gone either way.
  }
}

int vtllm_complete(vtllm_engine* engine, const char* request_json, char** response_json) {
  return run_request(engine, Call::kComplete, request_json, response_json, nullptr, nullptr);
}

int vtllm_chat(vtllm_engine* engine, const char* request_json, char** response_json) {
  return run_request(engine, Call::kChat, request_json, response_json, nullptr, nullptr);
}

int vtllm_stream(vtllm_engine* engine, const char* request_json, vtllm_stream_fn cb, void* user) {
  return run_request(engine, Call::kStream, request_json, nullptr, cb, user);
}

int vtllm_abort(vtllm_engine* engine, const char* request_id) {
  try {
    if (!engine || !request_id)
      return fail(VTLLM_ERR_INVALID_ARGUMENT, "vtllm_abort: engine and request_id are required");
    std::lock_guard lock(engine->mu);
    auto it = engine->in_flight.find(request_id);
    if (it == engine->in_flight.end())
      return fail(VTLLM_ERR_NOT_FOUND,
                  vtllm::str_cat("vtllm_abort: no request '", request_id, "' is in flight"));
    if (it->second.gen) {
      it->second.gen->cancel();
    } else {
      it->second.cancelled = true;
    }
    return VTLLM_OK;
  } catch (const std::exception& err) {
    return fail(VTLLM_ERR_INTERNAL, err.what());
  } catch (...) {
    return fail(VTLLM_ERR_INTERNAL, "vtllm_abort: unknown exception");
  }
}

void vtllm_free_string(char* s) { std::free(s); }

const char* vtllm_last_error(void) { return t_last_error.c_str(); }

}  // extern "C"
