// vtllm serve DIR: the OpenAI-compatible HTTP server (src/server) over the
// engine (AsyncEngine + ModelRunner) with DIR's tokenizer and chat template.
//
// Prints one line saying what it serves, then serves until SIGINT/SIGTERM: the
// first drains (no new connections, new generation requests 503, those in
// flight finish for up to --shutdown-timeout, then the rest are ended with an
// error event and a log line) and exits 0; a second signal exits at once.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "engine/async_engine.h"
#include "model_setup.h"
#include "multimodal/media_pool.h"
#include "multimodal/media_processor.h"
#include "multimodal/processor_config.h"
#include "server/http_server.h"
#include "server/openai_service.h"
#include "server/stats_logger.h"

namespace vtllm::cli {

namespace {

constexpr const char* kUsage =
    "usage: vtllm serve DIR [options]\n"
    "  Serves the model in DIR through the OpenAI API (see docs/SERVER.md).\n"
    "  --host H                      listen address (default 127.0.0.1)\n"
    "  --port P                      listen port (default 8000; 0: any free port)\n"
    "  --served-model-name NAME      the model name clients use (default DIR)\n"
    "  --api-key KEY                 require 'Authorization: Bearer KEY' on /v1/* (or "
    "VTLLM_API_KEY)\n"
    "  --allowed-origins LIST        CORS origins, a JSON list or comma-separated (default "
    "[\"*\"])\n"
    "  --allowed-methods LIST        CORS methods (default [\"*\"])\n"
    "  --allowed-headers LIST        CORS request headers (default [\"*\"])\n"
    "  --allow-credentials           CORS: allow credentials\n"
    "  --max-body-bytes N            request-body limit, 413 over it (default 33554432)\n"
    "  --max-header-bytes N          request-head limit, 431 over it (default 65536)\n"
    "  --max-headers N               header-field count limit, 431 over it (default 256)\n"
    "  --max-connections N           open connections; more are answered 503 (default 4096)\n"
    "  --max-pending-requests N      generation requests in flight; more get 503 (default "
    "1024)\n"
    "  --keep-alive-timeout S        idle connection timeout (default 5)\n"
    "  --header-timeout S            time to send a request head (default 10)\n"
    "  --body-timeout S              time to send a request body (default 30)\n"
    "  --write-timeout S             time a client may take to read a response write "
    "(default 30)\n"
    "  --shutdown-timeout S          drain limit on SIGINT/SIGTERM (default 60)\n"
    "  --http-threads N              HTTP I/O threads (default 2..4 from the cores)\n"
    "  --disable-access-log          no line per response on stderr (vLLM's\n"
    "                                --disable-uvicorn-access-log is the same)\n"
    "  --disable-log-stats           no throughput line every 10 s while busy\n"
    "  --allowed-local-media-path D  chat media may be file:// URLs under D (default: refused)\n"
    "  --limit-mm-per-prompt JSON    media per request, e.g. '{\"image\": 4, \"video\": 1}'\n"
    "                                (default: no limit)\n"
    "  --mm-processor-kwargs JSON    processor settings over the checkpoint's, as vLLM, e.g.\n"
    "                                '{\"max_pixels\": 1003520, \"fps\": 1}'\n"
    "  --media-pool-threads N        threads decoding and preprocessing media (default\n"
    "                                min(cores, 8))\n"
    "  --tool-call-parser NAME       tool calls in chat replies: qwen3_coder or qwen3_xml\n"
    "                                (Qwen3.5/3.6 XML), hermes (Qwen3 JSON)\n"
    "  --enable-auto-tool-choice     allow tool_choice \"auto\" (needs --tool-call-parser)\n"
    "  --reasoning-parser NAME       <think> reasoning in chat replies: qwen3, deepseek_r1\n"
    "  --structured-outputs-config JSON  vLLM's, e.g. '{\"disable_any_whitespace\": true}':\n"
    "                                backend (auto, xgrammar), disable_any_whitespace,\n"
    "                                enable_in_reasoning, reasoning_parser, ...; or one key as\n"
    "                                --structured-outputs-config.KEY VALUE\n"
    "  (--max-num-seqs defaults to 256)\n";

constexpr const char* kSoFlag = "structured-outputs-config";
constexpr const char* kSoKeys[] = {"backend",
                                   "disable_fallback",
                                   "disable_any_whitespace",
                                   "disable_additional_properties",
                                   "reasoning_parser",
                                   "reasoning_parser_plugin",
                                   "enable_in_reasoning"};

// --structured-outputs-config's JSON with each --structured-outputs-config.KEY VALUE over
// it (a VALUE that parses as a JSON boolean is one, any other a string), as vLLM's CLI.
server::StructuredOutputsConfig structured_outputs_config(const Args& args) {
  nlohmann::json j = nlohmann::json::object();
  if (const std::optional<std::string> t = args.get(kSoFlag)) {
    j = nlohmann::json::parse(*t, nullptr, false);
    if (!j.is_object()) return server::parse_structured_outputs_config(*t);  // its error
  }
  for (const char* k : kSoKeys) {
    if (const std::optional<std::string> v = args.get(str_cat(kSoFlag, ".", k))) {
      const nlohmann::json b = nlohmann::json::parse(*v, nullptr, false);
      j[k] = b.is_boolean() ? b : nlohmann::json(*v);
    }
  }
  return server::parse_structured_outputs_config(j.dump());
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

// An integer flag in [lo, hi]; the error names the flag.
int64_t int_flag(const Args& args, const std::string& flag, int64_t fallback, int64_t lo,
                 int64_t hi) {
  const std::optional<std::string> v = args.get(flag);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE)
    VT_THROW("--", flag, " expects an integer, got '", *v, "'");
  if (x < lo || x > hi) VT_THROW("--", flag, " ", x, ": expected [", lo, ", ", hi, "]");
  return x;
}

// A duration flag in seconds, > 0 and at most a day.
std::chrono::milliseconds seconds_flag(const Args& args, const std::string& flag, double fallback) {
  const std::optional<std::string> v = args.get(flag);
  double x = fallback;
  if (v) {
    char* end = nullptr;
    x = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0') VT_THROW("--", flag, " expects seconds, got '", *v, "'");
  }
  if (!std::isfinite(x) || x <= 0 || x > 86400)
    VT_THROW("--", flag, " ", v.value_or(std::to_string(x)), ": expected seconds in (0, 86400]");
  return std::chrono::milliseconds(int64_t(std::ceil(x * 1000)));
}

// A list flag as vLLM writes it (a JSON list of strings) or comma-separated.
std::vector<std::string> list_flag(const Args& args, const std::string& flag,
                                   std::vector<std::string> fallback) {
  const std::optional<std::string> v = args.get(flag);
  if (!v) return fallback;
  std::vector<std::string> out;
  if (!v->empty() && v->front() == '[') {
    const nlohmann::json j = nlohmann::json::parse(*v, nullptr, /*allow_exceptions=*/false);
    if (!j.is_array()) VT_THROW("--", flag, " '", *v, "': not a JSON list");
    for (const nlohmann::json& e : j) {
      if (!e.is_string()) VT_THROW("--", flag, " '", *v, "': expected a list of strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  size_t at = 0;
  while (at <= v->size()) {
    const size_t comma = std::min(v->find(',', at), v->size());
    std::string item = v->substr(at, comma - at);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
    at = comma + 1;
  }
  return out;
}

// Many connections need many descriptors: take the hard limit.
// ", prefix caching" and, on a hybrid model, its GDN state snapshots.
std::string prefix_caching_note(const engine::EngineParts& setup, const engine::KvCacheConfig& kv) {
  if (!kv.enable_prefix_caching) return "";
  if (!setup.hybrid) return ", prefix caching";
  if (kv.num_state_snapshots == 0) return ", no prefix caching (no state snapshots)";
  return str_cat(", prefix caching (", kv.num_state_snapshots, " GDN state snapshots, stride ",
                 kv.snapshot_stride, ")");
}

void raise_open_file_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  std::vector<std::string> value_flags = model_value_flags();
  for (const char* f : {"host",
                        "port",
                        "served-model-name",
                        "api-key",
                        "max-body-bytes",
                        "max-header-bytes",
                        "max-headers",
                        "max-connections",
                        "max-pending-requests",
                        "keep-alive-timeout",
                        "header-timeout",
                        "body-timeout",
                        "write-timeout",
                        "shutdown-timeout",
                        "http-threads",
                        "allowed-origins",
                        "allowed-methods",
                        "allowed-headers",
                        "allowed-local-media-path",
                        "limit-mm-per-prompt",
                        "media-pool-threads",
                        "mm-processor-kwargs",
                        "tool-call-parser",
                        "reasoning-parser"})
    value_flags.emplace_back(f);
  value_flags.emplace_back(kSoFlag);
  for (const char* k : kSoKeys) value_flags.push_back(str_cat(kSoFlag, ".", k));
  std::vector<std::string> bool_flags = model_bool_flags();
  bool_flags.emplace_back("help");
  bool_flags.emplace_back("allow-credentials");
  for (const char* f : {"disable-access-log", "disable-uvicorn-access-log", "disable-log-stats",
                        "enable-auto-tool-choice"})
    bool_flags.emplace_back(f);
  Args args(argc, argv, value_flags, bool_flags);
  if (args.has("help")) {
    std::printf("%s%s", kUsage, kModelFlagsUsage);
    return 0;
  }
  if (args.positional().size() != 1) {
    std::string got;
    for (const std::string& p : args.positional()) got += " '" + p + "'";
    std::fprintf(stderr, "vtllm serve: expected one model directory, got %zu argument%s%s\n%s%s",
                 args.positional().size(), args.positional().size() == 1 ? "" : "s", got.c_str(),
                 kUsage, kModelFlagsUsage);
    return 2;
  }
  const std::string dir = args.positional()[0];

  // Every server flag is checked before the model loads.
  server::HttpServerConfig hc;
  hc.host = args.get_or("host", "127.0.0.1");
  hc.port = int(int_flag(args, "port", 8000, 0, 65535));
  hc.api_key = args.get("api-key").value_or(env("VTLLM_API_KEY").value_or(""));
  hc.limits.max_body_bytes =
      size_t(int_flag(args, "max-body-bytes", 32 << 20, 1, int64_t(1) << 40));
  hc.limits.max_header_bytes =
      size_t(int_flag(args, "max-header-bytes", 64 << 10, 1024, int64_t(1) << 30));
  hc.limits.max_headers = size_t(int_flag(args, "max-headers", 256, 1, 1 << 20));
  hc.max_connections = int(int_flag(args, "max-connections", 4096, 1, 1 << 20));
  const int max_pending = int(int_flag(args, "max-pending-requests", 1024, 1, 1 << 16));
  hc.keep_alive_timeout = seconds_flag(args, "keep-alive-timeout", 5);
  hc.header_timeout = seconds_flag(args, "header-timeout", 10);
  hc.body_timeout = seconds_flag(args, "body-timeout", 30);
  hc.write_timeout = seconds_flag(args, "write-timeout", 30);
  const std::chrono::milliseconds shutdown_timeout = seconds_flag(args, "shutdown-timeout", 60);
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  hc.io_threads = int(int_flag(args, "http-threads", std::clamp(cores / 4, 2, 4), 1, 64));
  hc.max_workers = max_pending + 64;  // the tokenize routes use workers too
  hc.cors.allowed_origins = list_flag(args, "allowed-origins", {"*"});
  hc.cors.allowed_methods = list_flag(args, "allowed-methods", {"*"});
  hc.cors.allowed_headers = list_flag(args, "allowed-headers", {"*"});
  hc.cors.allow_credentials = args.has("allow-credentials");
  hc.access_log = !args.has("disable-access-log") && !args.has("disable-uvicorn-access-log");
  // vLLM's rule: auto tool choice needs a parser.
  std::optional<server::ToolCallFormat> tool_parser;
  if (const std::optional<std::string> p = args.get("tool-call-parser")) {
    tool_parser = server::tool_call_format_from_name(*p);
    if (!tool_parser)
      VT_THROW("--tool-call-parser '", *p, "': expected qwen3_coder, qwen3_xml or hermes");
  }
  const bool auto_tools = args.has("enable-auto-tool-choice");
  if (auto_tools && !tool_parser) VT_THROW("--enable-auto-tool-choice requires --tool-call-parser");
  std::optional<server::ReasoningFormat> reasoning_parser;
  if (const std::optional<std::string> p = args.get("reasoning-parser")) {
    reasoning_parser = server::reasoning_format_from_name(*p);
    if (!reasoning_parser) VT_THROW("--reasoning-parser '", *p, "': expected qwen3 or deepseek_r1");
  }
  const server::StructuredOutputsConfig so_config = structured_outputs_config(args);
  if (so_config.reasoning_parser) {
    if (reasoning_parser && *reasoning_parser != *so_config.reasoning_parser)
      VT_THROW("--reasoning-parser and --structured-outputs-config's reasoning_parser differ");
    reasoning_parser = so_config.reasoning_parser;
  }
  const engine::EngineArgs flags = model_flags_from_args(args, dir, 256);
  raise_open_file_limit();
  // A busy port fails now, not after the model loaded.
  if (hc.port != 0) server::check_listen_address(hc.host, hc.port);
  // Checked before the model loads; applied to the checkpoint's processor config below.
  const std::optional<std::string> mm_kwargs = args.get("mm-processor-kwargs");
  if (mm_kwargs) {
    multimodal::ProcessorConfig probe;
    multimodal::apply_mm_processor_kwargs(probe, *mm_kwargs);
  }

  // Threads started from here on (engine, HTTP) inherit the blocked signals;
  // the main thread takes them with sigwait.
  server::block_termination_signals();
  engine::EngineParts setup = engine::build_engine(flags);
  if (!setup.tokenizer) VT_THROW("the server needs the model's tokenizer: ", setup.tokenizer_error);
  const text::Tokenizer& tokenizer = *setup.tokenizer;
  if (!setup.chat_template)
    std::fprintf(stderr,
                 "vtllm serve: no chat template (%s); /v1/chat/completions will answer 400\n",
                 setup.chat_template_error.c_str());
  const engine::EngineConfig ec = setup.engine;
  const int64_t max_model_len = ec.scheduler.max_model_len;
  engine::AsyncEngine engine(ec, std::move(setup.runner), &tokenizer);

  server::ServiceConfig sc;
  // Chat media: decoded and preprocessed on a pool of their own (multimodal/media_pool.h).
  std::unique_ptr<multimodal::MediaPool> media_pool;
  sc.media.vision = setup.vision;
  sc.media.language_model_only = flags.language_model_only;
  sc.media.allowed_local_media_path = args.get_or("allowed-local-media-path", "");
  if (const std::optional<std::string> l = args.get("limit-mm-per-prompt"))
    server::parse_limit_mm_per_prompt(*l, sc.media);
  const io::ModelConfig& mc = setup.model_config;
  sc.media.tokens = {int32_t(mc.image_token_id), int32_t(mc.video_token_id),
                     int32_t(mc.vision_start_token_id), int32_t(mc.vision_end_token_id)};
  if (mc.vision) sc.media.merge_size = mc.vision->spatial_merge_size;
  if (setup.vision) {
    media_pool = std::make_unique<multimodal::MediaPool>(
        int(int_flag(args, "media-pool-threads", multimodal::MediaPool::default_size(), 1, 256)));
    // The checkpoint's processor settings (preprocessor_config.json, ...).
    multimodal::ProcessorConfig pc = multimodal::load_processor_config(dir);
    if (mm_kwargs) multimodal::apply_mm_processor_kwargs(pc, *mm_kwargs);
    // One item's processor work is split over the pool too (one large image or video
    // then uses several cores).
    sc.media.process = [pc, loop = media_pool->parallel_for()](multimodal::MediaKind kind,
                                                               const std::string& bytes) {
      const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
      return multimodal::process_media(kind, {data, bytes.size()}, pc, {}, loop);
    };
  }
  sc.media.pool = media_pool.get();
  sc.model_name = args.get_or("served-model-name", dir);
  sc.model_root = dir;
  sc.max_model_len = max_model_len;
  sc.max_pending_requests = max_pending;
  sc.tool_call_parser = tool_parser;
  sc.enable_auto_tool_choice = auto_tools;
  sc.reasoning_parser = reasoning_parser;
  sc.structured_outputs = so_config;
  sc.eos_token_ids = ec.eos_token_ids;
  sc.sampling_defaults = server::SamplingDefaults::from_generation_config(setup.generation_config);
  if (!sc.sampling_defaults.empty())
    std::fprintf(stderr,
                 "vtllm serve: default sampling parameters from the generation config: %s "
                 "(requests that set a field keep theirs; --generation-config vllm ignores the "
                 "file)\n",
                 sc.sampling_defaults.describe().c_str());
  server::ChatRenderer render;
  if (setup.chat_template)
    render = [&](const std::string& req) { return setup.chat_template->render_request(req); };
  server::OpenAiService service(sc, engine, tokenizer, render);

  server::HttpServer http(hc, service);
  const int bound_port = http.bind();
  std::printf(
      "vtllm serve: %s (%s) on http://%s:%d, max_model_len %lld, max_num_seqs %d, "
      "%d KV blocks of %d%s%s\n",
      sc.model_name.c_str(), setup.describe(flags).c_str(), hc.host.c_str(), bound_port,
      static_cast<long long>(max_model_len), ec.scheduler.max_num_seqs, ec.kv_cache.num_blocks - 1,
      ec.kv_cache.block_size, prefix_caching_note(setup, ec.kv_cache).c_str(),
      hc.api_key.empty() ? "" : ", API key required");
  std::fflush(stdout);

  // vLLM's stats interval (VLLM_LOG_STATS_INTERVAL's default).
  std::optional<server::StatsLogger> stats;
  if (!args.has("disable-log-stats")) stats.emplace(service, std::chrono::seconds(10));
  std::thread serving([&] { http.serve(); });
  const int sig = server::wait_for_termination_signal();
  const double limit_s = double(shutdown_timeout.count()) / 1000;
  std::printf(
      "vtllm serve: signal %d, draining %d requests (at most %g s; a second signal exits now)\n",
      sig, service.in_flight(), limit_s);
  std::fflush(stdout);
  std::atomic<bool> drained{false};
  int cut = 0;
  std::thread drainer([&] {
    cut = http.shutdown(shutdown_timeout);
    drained = true;
  });
  while (!drained) {
    const int again = server::wait_for_termination_signal(std::chrono::milliseconds(100));
    if (again == 0) continue;
    std::printf("vtllm serve: signal %d again, exiting now with %d requests in flight\n", again,
                service.in_flight());
    std::fflush(stdout);
    std::_Exit(128 + again);
  }
  drainer.join();
  serving.join();
  if (cut > 0) {
    std::printf(
        "vtllm serve: the drain limit (--shutdown-timeout %g s) ended %d requests still "
        "running; their clients got a shutting_down error\n",
        limit_s, cut);
  }
  std::printf("vtllm serve: stopped\n");
  return 0;
}

}  // namespace vtllm::cli
