// vtllm: the command-line front end. Dispatches to one subcommand per file.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "base/error.h"
#include "base/version.h"
#include "commands.h"

namespace {

using vtllm::cli::Command;

// One row per subcommand; later ones join as they are built.
constexpr Command kCommands[] = {
    {"selfcheck", "run every CPU op (and CUDA op, with a GPU) against its reference",
     vtllm::cli::cmd_selfcheck},
    {"tokenize", "text on stdin to token ids (or pieces, or ids back to text)",
     vtllm::cli::cmd_tokenize},
    {"inspect", "architecture, layer pattern, exact parameter count and weight bytes of a model",
     vtllm::cli::cmd_inspect},
    {"template", "a chat request (JSON) on stdin to the prompt the model's chat template renders",
     vtllm::cli::cmd_template},
    {"bench", "benchmark a server (OpenAI API load: latency percentiles, throughput)",
     vtllm::cli::cmd_bench},
    {"serve", "the OpenAI-compatible HTTP server (completions, chat, streaming, metrics)",
     vtllm::cli::cmd_serve},
    {"generate", "one prompt's continuation, streamed to stdout (greedy or sampled)",
     vtllm::cli::cmd_generate},
};

void print_help() {
  std::printf(
      "vtllm %s: a C++ engine serving large language models\n\n"
      "usage: vtllm <command> [options]\n"
      "       vtllm --version | --help\n\n"
      "commands:\n",
      vtllm::version());
  for (const Command& c : kCommands) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf("\n'vtllm <command> --help' describes a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("vtllm %s (%s)\n", vtllm::version(), vtllm::build_info());
    return 0;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.run(argc - 2, argv + 2);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vtllm %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "vtllm: unknown command '%s' (see vtllm --help)\n", argv[1]);
  return 2;
}
