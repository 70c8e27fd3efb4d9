// vtllm bench serve: an OpenAI-API load generator (closed-loop concurrency sweep) that
// reports TTFT, TPOT, ITL and end-to-end latency percentiles and request/token
// throughput, as vLLM's `bench serve` does, against any server (vtllm or a peer).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "base/error.h"
#include "bench/multi_turn.h"
#include "bench/report.h"
#include "bench/serve_bench.h"
#include "bench/throughput_bench.h"
#include "bench/vision_bench.h"
#include "commands.h"
#include "io/weight_loader.h"

namespace vtllm::cli {

namespace {

std::vector<int> parse_int_list(const std::string& flag, const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    VT_REQUIRE(!item.empty() && end && *end == '\0' && v > 0 && v <= 100000, "--", flag, " '", s,
             "': '", item, "' is not a positive integer");
    out.push_back(int(v));
    pos = comma + 1;
  }
  return out;
}

constexpr const char* kServeUsage =
    "usage: vtllm bench serve [options]\n\n"
    "Sends streamed /v1/completions requests to an OpenAI-compatible server and reports\n"
    "TTFT, TPOT, ITL and end-to-end latency (mean/median/p90/p99) and request and token\n"
    "throughput for each concurrency level (closed loop: each of C clients sends its next\n"
    "request when its previous one ends).\n\n"
    "options:\n"
    "  --base-url URL       server root (default http://127.0.0.1:8000)\n"
    "  --endpoint PATH      default /v1/completions\n"
    "  --model NAME         the 'model' field of each request\n"
    "  --api-key KEY        sent as 'Authorization: Bearer KEY'\n"
    "  --concurrency LIST   levels, e.g. 1,8,32,64 (default 1)\n"
    "  --num-prompts N      requests per level (default max(8, 4 x concurrency))\n"
    "  --input-len N        prompt tokens (default 512)\n"
    "  --output-len N       max_tokens, with ignore_eos (default 128)\n"
    "  --prompt-kind K      ids: random token ids (default); text: random common words\n"
    "  --token-range LO,HI  ids drawn from [LO, HI) (default 1000,100000)\n"
    "  --no-ignore-eos      let the model stop at EOS\n"
    "  --seed N             prompt seed (default 0)\n"
    "  --warmup N           unmeasured requests before the first level (default 1)\n"
    "  --timeout S          read timeout per request in seconds (default 1800)\n"
    "  --json FILE          write the results as JSON\n"
    "  --dry-run            print the first request body and exit\n"
    "  --extra-body JSON    fields merged into every request body, e.g.\n"
    "                       '{\"cache_prompt\": true}' (llama.cpp) or '{\"return_token_ids\": "
    "true}'\n\n"
    "multi-turn mode (prefix caching; --input-len and --num-prompts do not apply):\n"
    "  --multi-turn         C conversations of T turns, each turn resending the history\n"
    "  --conversations C    default 32\n"
    "  --turns T            default 8\n"
    "  --user-len N         new user tokens per turn (default 256); answers are --output-len\n"
    "  --system-len N       a shared prefix before every conversation (default 0)\n"
    "  --multi-turn-mode M  append: the next turn carries the previous answer's ids (default);\n"
    "                       rewrite: other ids of its length in its place\n"
    "  --answer-ids A       append: where the answer's ids come from: auto (the response's\n"
    "                       token ids when --extra-body asks for them, else /tokenize of its\n"
    "                       text; default), tokenize, tokenize-llama (llama.cpp's /tokenize)\n"
    "  --concurrency N      workers sharing the conversations (default: one per conversation)\n";

// `bench serve --multi-turn`: the request and workload flags are parsed into `base`.
int bench_multi_turn(const Args& args, const bench::ServeBenchConfig& base) {
  bench::MultiTurnConfig m;
  m.request = base.request;
  m.workload = base.workload;
  VT_REQUIRE(m.workload.kind == bench::PromptKind::kTokenIds,
           "--multi-turn sends token-id prompts: --prompt-kind text does not apply");
  m.conversations = int(args.get_int("conversations", m.conversations));
  m.turns = int(args.get_int("turns", m.turns));
  m.user_len = args.get_int("user-len", m.user_len);
  m.system_len = args.get_int("system-len", m.system_len);
  m.mode = bench::parse_multi_turn_mode(args.get_or("multi-turn-mode", "append"));
  m.answer_ids = bench::parse_answer_ids(args.get_or("answer-ids", "auto"));
  m.concurrency = int(args.get_int("concurrency", 0));
  VT_REQUIRE(m.concurrency >= 0, "--concurrency must not be negative");
  std::printf(
      "bench serve --multi-turn: %s%s, %d conversations x %d turns (%s), user %lld + answer "
      "%lld tokens per turn, system prefix %lld, %d workers\n",
      m.request.base_url.c_str(), m.request.endpoint.c_str(), m.conversations, m.turns,
      m.mode == bench::MultiTurnMode::kAppend ? "append" : "rewrite", (long long)m.user_len,
      (long long)m.request.max_tokens, (long long)m.system_len,
      m.concurrency > 0 ? std::min(m.concurrency, m.conversations) : m.conversations);
  const bench::MultiTurnResult r = bench::run_multi_turn(m);
  bench::print_multi_turn(stdout, r);
  if (auto path = args.get("json")) {
    bench::write_file(*path, bench::multi_turn_json(m, r));
    std::printf("wrote %s\n", path->c_str());
  }
  int64_t failed = 0;
  for (const auto& t : r.turns) failed += t.failed;
  return failed ? 1 : 0;
}

int bench_serve(int argc, char** argv) {
  Args args(argc, argv,
            {"base-url",      "endpoint",  "model",      "api-key",     "concurrency",
             "num-prompts",   "input-len", "output-len", "prompt-kind", "token-range",
             "seed",          "warmup",    "timeout",    "json",        "extra-body",
             "conversations", "turns",     "user-len",   "system-len",  "multi-turn-mode",
             "answer-ids"},
            {"help", "no-ignore-eos", "dry-run", "multi-turn"});
  if (args.has("help") || !args.positional().empty()) {
    std::fputs(kServeUsage, args.has("help") ? stdout : stderr);
    return args.has("help") ? 0 : 2;
  }
  bench::ServeBenchConfig c;
  c.request.base_url = args.get_or("base-url", c.request.base_url);
  c.request.endpoint = args.get_or("endpoint", c.request.endpoint);
  c.request.model = args.get_or("model", "");
  c.request.api_key = args.get_or("api-key", "");
  c.request.max_tokens = args.get_int("output-len", 128);
  c.request.ignore_eos = !args.has("no-ignore-eos");
  c.request.timeout_s = args.get_double("timeout", c.request.timeout_s);
  c.workload.kind = bench::parse_prompt_kind(args.get_or("prompt-kind", "ids"));
  c.workload.input_len = args.get_int("input-len", 512);
  c.workload.seed = uint64_t(args.get_int("seed", 0));
  if (auto r = args.get("token-range")) {
    const std::vector<int> lohi = parse_int_list("token-range", *r);
    VT_REQUIRE(lohi.size() == 2 && lohi[0] < lohi[1], "--token-range '", *r, "': expected LO,HI");
    c.workload.token_lo = lohi[0];
    c.workload.token_hi = lohi[1];
  }
  if (auto e = args.get("extra-body")) {
    const auto j = nlohmann::json::parse(*e, nullptr, false);
    VT_REQUIRE(!j.is_discarded() && j.is_object(), "--extra-body '", *e, "': expected a JSON object");
    c.request.extra_body = *e;
  }
  if (args.has("multi-turn")) return bench_multi_turn(args, c);
  c.concurrency = parse_int_list("concurrency", args.get_or("concurrency", "1"));
  c.num_prompts = args.get_int("num-prompts", 0);
  c.warmup = args.get_int("warmup", 1);
  VT_REQUIRE(c.num_prompts >= 0, "--num-prompts must not be negative");
  VT_REQUIRE(c.warmup >= 0, "--warmup must not be negative");

  if (args.has("dry-run")) {
    bench::CompletionClient client(c.request);
    std::printf("POST %s%s\n%s\n", c.request.base_url.c_str(), c.request.endpoint.c_str(),
                client.request_body(bench::make_prompts(c.workload, 1)[0]).c_str());
    return 0;
  }

  std::printf("bench serve: %s%s, %s prompts of %lld tokens, output %lld%s, levels", 
              c.request.base_url.c_str(), c.request.endpoint.c_str(),
              bench::prompt_kind_name(c.workload.kind), (long long)c.workload.input_len,
              (long long)c.request.max_tokens, c.request.ignore_eos ? " (ignore_eos)" : "");
  for (int l : c.concurrency) std::printf(" %d", l);
  std::printf("\n");
  bench::print_serve_header(stdout);
  const auto levels = bench::run_serve_bench(
      c, [](const bench::RunSummary& s) { bench::print_serve_row(stdout, s); });
  if (auto path = args.get("json")) {
    bench::write_file(*path, bench::serve_json(c, levels));
    std::printf("wrote %s\n", path->c_str());
  }
  int64_t failed = 0;
  for (const auto& s : levels) failed += s.failed;
  return failed ? 1 : 0;
}

constexpr const char* kThroughputUsage =
    "usage: vtllm bench throughput DIR [options]\n\n"
    "Model speed in-process (no server, no sampler: greedy argmax on the device). Decode:\n"
    "B requests prefilled to --input-len tokens, then --output-len timed decode steps of B\n"
    "tokens (median step). Prefill (--prefill-only): B prompts of --input-len tokens in one\n"
    "step. Each row: step time, tokens/s, achieved GB/s (weights + KV + GDN state bytes a\n"
    "step must move, counted from config.json) against the 4.3 TB/s copy ceiling and\n"
    "TFLOP/s against 790 (H200 dense bf16, measured).\n\n"
    "options:\n"
    "  --device D                  cuda (default), cuda:N or cpu\n"
    "  --load-format auto|dummy    safetensors of DIR, or random weights of config.json's shapes\n"
    "  --batch LIST                batch sizes, e.g. 1,8,32,64 (default 1)\n"
    "  --input-len N               prompt / decode context tokens (default 512)\n"
    "  --output-len N              timed decode steps per row (default 64)\n"
    "  --prefill-only              time prefill steps instead of decode\n"
    "  --prefill-lens LIST         also time batch-1 prefill of these prompt lengths after the\n"
    "                              decode rows (one model load for both), e.g. 512,4096\n"
    "  --repeats N                 timed prefill steps per row (default 5)\n"
    "  --gpu-memory-utilization F  share of device memory for weights + activations + cache\n"
    "                              (default 0.9)\n"
    "  --enforce-eager             no CUDA graphs (default: decode batches up to 64 replay\n"
    "                              graphs captured in the untimed warm-up steps)\n"
    "  --seed N                    dummy weights and prompt ids (default 0)\n"
    "  --profile-ops               after each row's timed steps, time every op of\n"
    "                              --profile-steps more eager steps (graph capture off while\n"
    "                              profiling): op, calls, us, share of the step, GB/s and\n"
    "                              TFLOP/s where the op states its bytes and FLOPs, per layer\n"
    "  --profile-steps N           profiled steps per row (default 3)\n"
    "  --json FILE                 write the results as JSON\n\n"
    "MoE models: each row also runs untimed probe steps that count the distinct experts\n"
    "the router chose per layer; the row's bytes count those experts.\n";

int bench_throughput(int argc, char** argv) {
  Args args(argc, argv,
            {"device", "load-format", "batch", "input-len", "output-len", "repeats", "prefill-lens",
             "gpu-memory-utilization", "seed", "json", "profile-steps"},
            {"help", "prefill-only", "enforce-eager", "profile-ops"});
  if (args.has("help") || args.positional().size() != 1) {
    std::fputs(kThroughputUsage, args.has("help") ? stdout : stderr);
    return args.has("help") ? 0 : 2;
  }
  bench::ThroughputConfig c;
  c.dir = args.positional()[0];
  c.device = vt::device_from_name(args.get_or("device", "cuda"));
  const std::string format = args.get_or("load-format", "auto");
  c.load_format = io::load_format_from_name(format, "--load-format");
  c.batches = parse_int_list("batch", args.get_or("batch", "1"));
  c.input_len = args.get_int("input-len", 512);
  c.output_len = args.get_int("output-len", 64);
  c.repeats = int(args.get_int("repeats", 5));
  c.prefill_only = args.has("prefill-only");
  c.enforce_eager = args.has("enforce-eager");
  if (auto l = args.get("prefill-lens"))
    for (int v : parse_int_list("prefill-lens", *l)) c.prefill_lens.push_back(v);
  c.gpu_memory_utilization = args.get_double("gpu-memory-utilization", 0.9);
  c.seed = uint64_t(args.get_int("seed", 0));
  c.profile_ops = args.has("profile-ops");
  c.profile_steps = int(args.get_int("profile-steps", c.profile_steps));
  VT_REQUIRE(c.profile_steps > 0, "--profile-steps must be > 0");
  VT_REQUIRE(c.input_len > 0 && c.output_len > 0 && c.repeats > 0,
           "--input-len, --output-len and --repeats must be > 0");

  std::printf("bench throughput: %s on %s%s, %s weights, %s, input %lld%s, batches", c.dir.c_str(),
              c.device.str().c_str(),
              c.device.is_cuda() ? (c.enforce_eager ? " (eager)" : " (cuda graphs)") : "",
              format.c_str(), c.prefill_only ? "prefill" : "decode",
              (long long)c.input_len,
              c.prefill_only ? "" : str_cat(", ", c.output_len, " decode steps").c_str());
  for (int b : c.batches) std::printf(" %d", b);
  std::printf("\n");
  if (c.profile_ops)
    std::printf(
        "profiling ops: %d eager steps per row after its timed steps, graph capture off "
        "while profiling\n",
        c.profile_steps);
  std::fflush(stdout);
  bool header = false;
  const bench::ThroughputResult r = bench::run_throughput(c, [&](const bench::ThroughputRow& row) {
    if (!header) {
      bench::print_throughput_header(stdout);
      header = true;
    }
    bench::print_throughput_row(stdout, row);
  });
  std::printf("model: %s; %lld parameters, %.2f GB of weights read per step; loaded in %.1f s\n",
              r.model.c_str(), (long long)r.parameters, r.cost.weight_bytes / 1e9, r.load_seconds);
  if (!r.cache_plan.empty()) std::printf("%s\n", r.cache_plan.c_str());
  if (auto path = args.get("json")) {
    bench::write_file(*path, bench::throughput_json(c, r));
    std::printf("wrote %s\n", path->c_str());
  }
  return 0;
}

constexpr const char* kVisionUsage =
    "usage: vtllm bench vision DIR [options]\n\n"
    "The multimodal path of DIR's model in-process (one engine load): the vision tower on\n"
    "random square images; the TTFT of a chat with one image through the engine, with and\n"
    "without the JPEG decode + processor; a synthetic video through the video processor and\n"
    "the tower; CPU decode + preprocessing on the media pool at 1 and N threads.\n\n"
    "options:\n"
    "  --device D            cuda (default) or cpu\n"
    "  --load-format F       auto (DIR's weights) or dummy (random weights of config.json)\n"
    "  --gpu-memory-utilization F  (default 0.9)\n"
    "  --parts LIST          of tower,ttft,video,cpu (default all)\n"
    "  --images LIST         tower rows: images per encode call (default 1,16)\n"
    "  --image-size N        pixels per side (default 1024)\n"
    "  --repeats N           timed calls per row, median (default 5)\n"
    "  --profile-ops         tower rows: the per-op time of --profile-steps more encodes\n"
    "  --profile-steps N     profiled encodes per tower row (default 3)\n"
    "  --text-tokens N       the chat's text tokens around the image (default 64)\n"
    "  --video-seconds S     clip length (default 30)\n"
    "  --video-size WxH      frame size (default 1280x720)\n"
    "  --video-fps F         the clip's frame rate (default 30; the processor samples at its\n"
    "                        own fps, 2 for Qwen3.5)\n"
    "  --cpu-threads LIST    media pool sizes (default 1 and the hardware threads)\n"
    "  --seed N              dummy weights, prompt ids and image content (default 0)\n"
    "  --json FILE           write the results as JSON\n";

int bench_vision(int argc, char** argv) {
  Args args(argc, argv,
            {"device", "load-format", "images", "image-size", "repeats", "parts", "text-tokens",
             "video-seconds", "video-size", "video-fps", "cpu-threads", "seed", "json",
             "gpu-memory-utilization", "profile-steps"},
            {"help", "profile-ops"});
  if (args.has("help") || args.positional().size() != 1) {
    std::fputs(kVisionUsage, args.has("help") ? stdout : stderr);
    return args.has("help") ? 0 : 2;
  }
  bench::VisionBenchConfig c;
  c.dir = args.positional()[0];
  c.device = vt::device_from_name(args.get_or("device", "cuda"));
  c.load_format = io::load_format_from_name(args.get_or("load-format", "auto"), "--load-format");
  c.gpu_memory_utilization = args.get_double("gpu-memory-utilization", 0.9);
  c.images = parse_int_list("images", args.get_or("images", "1,16"));
  c.image_size = args.get_int("image-size", 1024);
  c.repeats = int(args.get_int("repeats", 5));
  c.text_tokens = args.get_int("text-tokens", 64);
  c.video_seconds = args.get_double("video-seconds", 30);
  c.video_source_fps = args.get_double("video-fps", 30);
  c.seed = uint64_t(args.get_int("seed", 0));
  c.profile_ops = args.has("profile-ops");
  c.profile_steps = int(args.get_int("profile-steps", c.profile_steps));
  VT_REQUIRE(c.repeats > 0, "--repeats must be > 0");
  VT_REQUIRE(c.profile_steps > 0, "--profile-steps must be > 0");
  VT_REQUIRE(c.text_tokens >= 0, "--text-tokens must not be negative");
  VT_REQUIRE(c.video_seconds > 0 && c.video_source_fps > 0,
             "--video-seconds and --video-fps must be > 0");
  if (auto sz = args.get("video-size")) {
    const size_t x = sz->find('x');
    VT_REQUIRE(x != std::string::npos, "--video-size '", *sz, "': expected WxH");
    const std::vector<int> w = parse_int_list("video-size", sz->substr(0, x));
    const std::vector<int> h = parse_int_list("video-size", sz->substr(x + 1));
    VT_REQUIRE(w.size() == 1 && h.size() == 1, "--video-size '", *sz, "': expected WxH");
    c.video_width = w[0];
    c.video_height = h[0];
  }
  if (auto t = args.get("cpu-threads")) c.cpu_threads = parse_int_list("cpu-threads", *t);
  if (auto p = args.get("parts")) {
    c.tower = c.ttft = c.video = c.cpu = false;
    size_t pos = 0;
    while (pos <= p->size()) {
      const size_t comma = std::min(p->find(',', pos), p->size());
      const std::string part = p->substr(pos, comma - pos);
      if (part == "tower")
        c.tower = true;
      else if (part == "ttft")
        c.ttft = true;
      else if (part == "video")
        c.video = true;
      else if (part == "cpu")
        c.cpu = true;
      else
        VT_THROW("--parts '", *p, "': '", part, "' is not one of tower, ttft, video, cpu");
      pos = comma + 1;
    }
  }
  const std::string json = bench::run_vision_bench(c);
  if (auto path = args.get("json")) {
    bench::write_file(*path, json);
    std::printf("wrote %s\n", path->c_str());
  }
  return 0;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  const char* usage =
      "usage: vtllm bench <mode> [options]\n\n"
      "modes:\n"
      "  serve        load an OpenAI-compatible server; latency percentiles and throughput\n"
      "  throughput   model speed in-process: decode / prefill tokens/s against the roofline\n"
      "  vision       the multimodal path in-process: the tower's images/s and TFLOP/s, chat\n"
      "               TTFT with one image, a video, CPU preprocessing at 1 and N threads\n\n"
      "'vtllm bench <mode> --help' describes a mode's options.\n";
  if (argc < 1 || !std::strcmp(argv[0], "--help") || !std::strcmp(argv[0], "-h")) {
    std::fputs(usage, argc < 1 ? stderr : stdout);
    return argc < 1 ? 2 : 0;
  }
  if (!std::strcmp(argv[0], "serve")) return bench_serve(argc - 1, argv + 1);
  if (!std::strcmp(argv[0], "throughput")) return bench_throughput(argc - 1, argv + 1);
  if (!std::strcmp(argv[0], "vision")) return bench_vision(argc - 1, argv + 1);
  std::fprintf(stderr, "vtllm bench: unknown mode '%s'\n\n%s", argv[0], usage);
  return 2;
}

}  // namespace vtllm::cli
