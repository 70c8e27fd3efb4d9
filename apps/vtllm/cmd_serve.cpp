// vtllm serve DIR: the OpenAI-compatible HTTP server (src/server) over the
// engine (AsyncEngine + ModelRunner) with DIR's tokenizer and chat template.
//
// Prints one line saying what it serves, then serves until SIGINT/SIGTERM,
// which drain the requests in flight before it exits with status 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "engine/async_engine.h"
#include "model_setup.h"
#include "server/http_server.h"
#include "server/openai_service.h"

namespace vtllm::cli {

namespace {

constexpr const char* kUsage =
    "usage: vtllm serve DIR [options]\n"
    "  Serves the model in DIR through the OpenAI API (see docs/SERVER.md).\n"
    "  --host H                      listen address (default 127.0.0.1)\n"
    "  --port P                      listen port (default 8000)\n"
    "  --served-model-name NAME      the model name clients use (default DIR)\n"
    "  --api-key KEY                 require 'Authorization: Bearer KEY' on /v1/* (or "
    "VTLLM_API_KEY)\n"
    "  --max-body-bytes N            request-body limit (default 33554432)\n"
    "  (--max-num-seqs defaults to 256)\n";


std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  std::vector<std::string> value_flags = model_value_flags();
  for (const char* f : {"host", "port", "served-model-name", "api-key", "max-body-bytes"})
    value_flags.emplace_back(f);
  std::vector<std::string> bool_flags = model_bool_flags();
  bool_flags.emplace_back("help");
  Args args(argc, argv, value_flags, bool_flags);
  if (args.has("help")) {
    std::printf("%s%s", kUsage, kModelFlagsUsage);
    return 0;
  }
  if (args.positional().size() != 1) {
    std::fprintf(stderr, "%s%s", kUsage, kModelFlagsUsage);
    return 2;
  }
  const std::string dir = args.positional()[0];
  const ModelFlags flags = model_flags_from_args(args, dir, 256);
  const int64_t port = args.get_int("port", 8000);
  VT_CHECK(port >= 0 && port <= 65535, "--port ", port, ": expected [0, 65535]");

  // Threads started from here on (engine, HTTP workers) inherit the blocked
  // signals; the main thread takes them with sigwait.
  server::block_termination_signals();
  ModelSetup setup = load_model_setup(flags);
  VT_CHECK(setup.tokenizer, "the server needs the model's tokenizer: ", setup.tokenizer_error);
  const text::Tokenizer& tokenizer = *setup.tokenizer;
  if (!setup.chat_template)
    std::fprintf(stderr,
                 "vtllm serve: no chat template (%s); /v1/chat/completions will answer 400\n",
                 setup.chat_template_error.c_str());
  const engine::EngineConfig ec = setup.engine;
  const int64_t max_model_len = ec.scheduler.max_model_len;
  engine::AsyncEngine engine(ec, std::move(setup.runner), &tokenizer);

  server::ServiceConfig sc;
  sc.model_name = args.get_or("served-model-name", dir);
  sc.model_root = dir;
  sc.max_model_len = max_model_len;
  server::ChatRenderer render;
  if (setup.chat_template)
    render = [&](const std::string& req) { return setup.chat_template->render_request(req); };
  server::OpenAiService service(sc, engine, tokenizer, render);

  server::HttpServerConfig hc;
  hc.host = args.get_or("host", "127.0.0.1");
  hc.port = int(port);
  hc.api_key = args.get("api-key").value_or(env("VTLLM_API_KEY").value_or(""));
  hc.max_body_bytes = size_t(args.get_int("max-body-bytes", 32 << 20));
  hc.num_threads = std::min(ec.scheduler.max_num_seqs + 16, 1024);
  server::HttpServer http(hc, service);
  const int bound_port = http.bind();
  std::printf(
      "vtllm serve: %s (%s) on http://%s:%d, max_model_len %lld, max_num_seqs %d, "
      "%d KV blocks of %d%s%s\n",
      sc.model_name.c_str(), describe(setup, flags).c_str(), hc.host.c_str(), bound_port,
      static_cast<long long>(max_model_len), ec.scheduler.max_num_seqs,
      ec.kv_cache.num_blocks - 1, ec.kv_cache.block_size,
      ec.kv_cache.enable_prefix_caching ? ", prefix caching" : "",
      hc.api_key.empty() ? "" : ", API key required");
  std::fflush(stdout);

  std::thread serving([&] { http.serve(); });
  const int sig = server::wait_for_termination_signal();
  std::printf("vtllm serve: signal %d, draining %d requests\n", sig, service.in_flight());
  std::fflush(stdout);
  http.shutdown(std::chrono::seconds(60));
  serving.join();
  std::printf("vtllm serve: stopped\n");
  return 0;
}

}  // namespace vtllm::cli
