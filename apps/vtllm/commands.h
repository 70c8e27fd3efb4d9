// The vtllm subcommands. Each lives in its own cmd_<name>.cpp and gets the
// arguments after its name; it returns the process exit code and may throw
// vtllm::Error, which main() prints as "vtllm <name>: error: ...".
#pragma once

namespace vtllm::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

int cmd_selfcheck(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_template(int argc, char** argv);
int cmd_bench(int argc, char** argv);

}  // namespace vtllm::cli
