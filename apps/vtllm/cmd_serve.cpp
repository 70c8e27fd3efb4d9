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

#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "engine/async_engine.h"
#include "engine/model_runner.h"
#include "io/config.h"
#include "server/http_server.h"
#include "server/openai_service.h"
#include "server/text_detokenizer.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

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
    "  --max-num-seqs N              requests in one batch (default 256)\n"
    "  --max-num-batched-tokens N    tokens in one step (default 2048)\n"
    "  --max-model-len N             context length (default: the model's "
    "max_position_embeddings)\n"
    "  --gpu-memory-utilization F    fraction of GPU memory for weights and cache, (0, 1] (default "
    "0.9);\n"
    "                                the CPU backend sizes its cache with "
    "--num-gpu-blocks-override\n"
    "  --num-gpu-blocks-override N   KV-cache blocks (default on CPU: enough for 16 full-length "
    "requests)\n"
    "  --load-format auto            weights from DIR's safetensors (the only format the loader "
    "has yet)\n"
    "  --language-model-only         text only (the loader builds no vision tower yet, so always "
    "true)\n"
    "  --enable-prefix-caching       reuse cached prompt blocks (default)\n"
    "  --no-enable-prefix-caching    do not\n"
    "  --chat-template FILE          a Jinja chat template replacing DIR's\n"
    "  --max-body-bytes N            request-body limit (default 33554432)\n";

constexpr int kBlockSize = 16;

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  Args args(argc, argv,
            {"host", "port", "served-model-name", "api-key", "max-num-seqs",
             "max-num-batched-tokens", "max-model-len", "gpu-memory-utilization",
             "num-gpu-blocks-override", "load-format", "chat-template", "max-body-bytes"},
            {"help", "language-model-only", "enable-prefix-caching", "no-enable-prefix-caching"});
  if (args.has("help")) {
    std::printf("%s", kUsage);
    return 0;
  }
  if (args.positional().size() != 1) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const std::string dir = args.positional()[0];
  const std::string load_format = args.get_or("load-format", "auto");
  VT_CHECK(load_format == "auto", "--load-format ", load_format,
           ": the model loader reads safetensors only (auto)");
  const double mem = args.get_double("gpu-memory-utilization", 0.9);
  VT_CHECK(mem > 0 && mem <= 1, "--gpu-memory-utilization ", mem, ": expected (0, 1]");
  VT_CHECK(!(args.has("enable-prefix-caching") && args.has("no-enable-prefix-caching")),
           "--enable-prefix-caching and --no-enable-prefix-caching contradict each other");

  const io::ModelConfig model_config = io::load_model_config(dir);
  const io::GenerationConfig gen_config = io::load_generation_config(dir);
  const int64_t max_model_len =
      args.get_int("max-model-len", model_config.text.max_position_embeddings);
  VT_CHECK(max_model_len > 0, "--max-model-len ", max_model_len, ": expected > 0");
  const int64_t max_num_seqs = args.get_int("max-num-seqs", 256);
  VT_CHECK(max_num_seqs > 0 && max_num_seqs <= 65536, "--max-num-seqs ", max_num_seqs,
           ": expected [1, 65536]");
  const int64_t port = args.get_int("port", 8000);
  VT_CHECK(port >= 0 && port <= 65535, "--port ", port, ": expected [0, 65535]");

  engine::EngineConfig ec;
  ec.scheduler.max_model_len = max_model_len;
  ec.scheduler.max_num_seqs = int(max_num_seqs);
  ec.scheduler.max_num_batched_tokens = args.get_int("max-num-batched-tokens", 2048);
  ec.kv_cache.block_size = kBlockSize;
  const int64_t blocks_per_seq = (max_model_len + kBlockSize - 1) / kBlockSize;
  ec.kv_cache.num_blocks = int32_t(args.get_int(
      "num-gpu-blocks-override", blocks_per_seq * std::min<int64_t>(max_num_seqs, 16) + 1));
  ec.kv_cache.enable_prefix_caching = !args.has("no-enable-prefix-caching");
  const auto& eos =
      gen_config.eos_token_ids.empty() ? model_config.eos_token_ids : gen_config.eos_token_ids;
  for (int64_t id : eos) ec.eos_token_ids.push_back(int32_t(id));

  const text::Tokenizer tokenizer = text::Tokenizer::from_dir(dir);
  std::optional<ChatTemplate> chat_template;
  try {
    chat_template = ChatTemplate::from_dir(dir, args.get_or("chat-template", ""));
  } catch (const Error& e) {
    // A model without a template still serves completions; an explicit file must load.
    if (args.has("chat-template")) throw;
    std::fprintf(stderr,
                 "vtllm serve: no chat template (%s); /v1/chat/completions will answer 400\n",
                 e.what());
  }

  // Threads started from here on (engine, HTTP workers) inherit the blocked
  // signals; the main thread takes them with sigwait.
  server::block_termination_signals();
  // One GDN state slot per running request (a dense model's runner ignores them).
  ec.kv_cache.num_state_slots = int32_t(max_num_seqs);
  auto runner = engine::ModelRunner::load(dir, ec.kv_cache);
  const bool hybrid = engine::needs_state_slots(runner->model());
  engine::AsyncEngine engine(ec, std::move(runner),
                             std::make_unique<server::TextDetokenizerFactory>(tokenizer));

  server::ServiceConfig sc;
  sc.model_name = args.get_or("served-model-name", dir);
  sc.model_root = dir;
  sc.max_model_len = max_model_len;
  server::ChatRenderer render;
  if (chat_template)
    render = [&](const std::string& req) { return chat_template->render_request(req); };
  server::OpenAiService service(sc, engine, tokenizer, render);

  server::HttpServerConfig hc;
  hc.host = args.get_or("host", "127.0.0.1");
  hc.port = int(port);
  hc.api_key = args.get("api-key").value_or(env("VTLLM_API_KEY").value_or(""));
  hc.max_body_bytes = size_t(args.get_int("max-body-bytes", 32 << 20));
  hc.num_threads = int(std::min<int64_t>(max_num_seqs + 16, 1024));
  server::HttpServer http(hc, service);
  const int bound_port = http.bind();
  std::printf(
      "vtllm serve: %s (%s, %s) on http://%s:%d, max_model_len %lld, max_num_seqs %lld, "
      "%d KV blocks of %d%s%s\n",
      sc.model_name.c_str(), model_config.architecture_class.c_str(), hybrid ? "hybrid" : "dense",
      hc.host.c_str(), bound_port, static_cast<long long>(max_model_len),
      static_cast<long long>(max_num_seqs), ec.kv_cache.num_blocks - 1, kBlockSize,
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
