// vtllm selfcheck: runs the ops on random inputs against their references.
#include <cstdio>

#include "args.h"
#include "commands.h"

namespace vtllm::cli {

int cmd_selfcheck(int argc, char** argv) {
  Args args(argc, argv, {}, {"help"});
  if (args.has("help")) {
    std::printf("usage: vtllm selfcheck\n");
    return 0;
  }
  std::fprintf(stderr, "vtllm selfcheck: no ops are registered yet\n");
  return 1;
}

}  // namespace vtllm::cli
