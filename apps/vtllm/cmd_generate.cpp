// vtllm generate DIR: one prompt through the synchronous engine (LlmEngine +
// ModelRunner), the continuation streamed to stdout as it is generated.
//
// stdout carries only the generated text (through the incremental detokenizer,
// flushed per step) or, with --print-ids, the generated ids on one line; a
// one-line summary goes to stderr at the end.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "engine/llm_engine.h"
#include "model_setup.h"

namespace vtllm::cli {

namespace {

constexpr const char* kUsage =
    "usage: vtllm generate DIR (--prompt TEXT | --prompt-ids \"ID ID ...\") [options]\n"
    "  Generates one continuation with the model in DIR; text goes to stdout as it is\n"
    "  generated, a summary line to stderr.\n"
    "  --prompt TEXT                 the prompt, encoded with DIR's tokenizer\n"
    "  --prompt-ids \"ID ID ...\"      the prompt as token ids (spaces or commas between)\n"
    "  --chat                        apply DIR's chat template to --prompt as one user message\n"
    "                                (with the generation prompt)\n"
    "  --max-tokens N                tokens to generate at most (default 16)\n"
    "  --temperature T               0 is greedy (default 0; generation_config.json's sampling\n"
    "                                defaults are not applied)\n"
    "  --top-p P                     (0, 1] (default 1)\n"
    "  --top-k K                     0 or -1 disables (default 0)\n"
    "  --seed S                      per-request seed: the same seed, the same tokens\n"
    "  --ignore-eos                  do not stop at the model's eos tokens\n"
    "  --print-ids                   print the generated ids (one line, space-separated) instead "
    "of text\n"
    "  (--max-num-seqs defaults to 1)\n";

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  const char* p = s.c_str();
  while (*p) {
    if (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') {
      ++p;
      continue;
    }
    char* end = nullptr;
    const long long v = std::strtoll(p, &end, 10);
    VT_REQUIRE(
        end != p && (*end == '\0' || *end == ' ' || *end == ',' || *end == '\t' || *end == '\n'),
        "--prompt-ids: '", s, "' is not a list of integers");
    VT_REQUIRE(v >= 0 && v <= INT32_MAX, "--prompt-ids: ", v, " is not a token id");
    ids.push_back(int32_t(v));
    p = end;
  }
  VT_REQUIRE(!ids.empty(), "--prompt-ids: no ids given");
  return ids;
}

}  // namespace

int cmd_generate(int argc, char** argv) {
  std::vector<std::string> value_flags = model_value_flags();
  for (const char* f :
       {"prompt", "prompt-ids", "max-tokens", "temperature", "top-p", "top-k", "seed"})
    value_flags.emplace_back(f);
  std::vector<std::string> bool_flags = model_bool_flags();
  for (const char* f : {"help", "chat", "ignore-eos", "print-ids"}) bool_flags.emplace_back(f);
  Args args(argc, argv, value_flags, bool_flags);
  if (args.has("help")) {
    std::printf("%s%s", kUsage, kModelFlagsUsage);
    return 0;
  }
  if (args.positional().size() != 1 || args.has("prompt") == args.has("prompt-ids")) {
    std::fprintf(stderr, "%s%s", kUsage, kModelFlagsUsage);
    return 2;
  }
  VT_REQUIRE(!args.has("chat") || args.has("prompt"), "--chat needs --prompt (text)");
  const bool print_ids = args.has("print-ids");

  engine::SamplingParams params;
  params.max_tokens = args.get_int("max-tokens", 16);
  params.temperature = float(args.get_double("temperature", 0.0));
  params.top_p = float(args.get_double("top-p", 1.0));
  params.top_k = int(args.get_int("top-k", 0));
  if (args.has("seed")) {
    const int64_t seed = args.get_int("seed", 0);
    VT_REQUIRE(seed >= 0, "--seed ", seed, ": expected >= 0");
    params.seed = uint64_t(seed);
  }
  params.ignore_eos = args.has("ignore-eos");

  const engine::EngineArgs flags = model_flags_from_args(args, args.positional()[0], 1);
  engine::EngineParts setup = engine::build_engine(flags);
  const text::Tokenizer* tokenizer = setup.tokenizer ? &*setup.tokenizer : nullptr;
  if (!tokenizer && !(print_ids && args.has("prompt-ids")))
    VT_THROW(flags.dir, " has no tokenizer (", setup.tokenizer_error,
             "): only --prompt-ids with --print-ids work");

  std::vector<int32_t> prompt;
  if (args.has("prompt-ids")) {
    prompt = parse_ids(*args.get("prompt-ids"));
  } else if (args.has("chat")) {
    VT_REQUIRE(setup.chat_template, "--chat: ", setup.chat_template_error);
    const nlohmann::json request = {
        {"messages", {{{"role", "user"}, {"content", *args.get("prompt")}}}},
        {"add_generation_prompt", true}};
    // The template writes the special tokens itself (as the server's chat route).
    prompt = tokenizer->encode(setup.chat_template->render_request(request.dump()),
                               /*add_special_tokens=*/false);
  } else {
    prompt = tokenizer->encode(*args.get("prompt"));
  }
  VT_REQUIRE(!prompt.empty(), "the prompt encodes to no tokens");

  engine::LlmEngine engine(setup.engine, std::move(setup.runner), print_ids ? nullptr : tokenizer);

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  engine.add_request("generate", prompt, params);
  int64_t generated = 0;
  double first_token_s = 0;
  engine::FinishReason reason = engine::FinishReason::kNone;
  bool ended_with_newline = true;
  while (engine.has_unfinished()) {
    for (const engine::EngineOutput& o : engine.step()) {
      if (generated == 0 && !o.new_token_ids.empty())
        first_token_s = std::chrono::duration<double>(Clock::now() - start).count();
      for (int32_t id : o.new_token_ids) {
        if (print_ids) std::printf(generated > 0 ? " %d" : "%d", id);
        ++generated;
      }
      if (!print_ids && !o.new_text.empty()) {
        std::fwrite(o.new_text.data(), 1, o.new_text.size(), stdout);
        ended_with_newline = o.new_text.back() == '\n';
      }
      if (o.finished) reason = o.finish_reason;
    }
    std::fflush(stdout);
  }
  const double total_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (print_ids || !ended_with_newline) std::printf("\n");
  std::fflush(stdout);
  // Decode rate: tokens after the first over the time after the first.
  const double decode_s = total_s - first_token_s;
  std::fprintf(stderr,
               "vtllm generate: %zu prompt tokens, %lld generated in %.3f s (first after %.3f s, "
               "%.1f tokens/s after it), finish reason %s\n",
               prompt.size(), static_cast<long long>(generated), total_s, first_token_s,
               generated > 1 && decode_s > 0 ? double(generated - 1) / decode_s : 0.0,
               engine::to_string(reason));
  return 0;
}

}  // namespace vtllm::cli
