// libFuzzer target: any bytes as a regex must convert or throw vtllm::Error;
// the grammar's matcher masks must agree with accept_token on a small
// vocabulary. Never crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "structured/regex_grammar.h"
#include "structured_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 2048) return 0;
  const size_t choices = size < 16 ? size : 16;
  const std::string_view pattern(reinterpret_cast<const char*>(data) + choices, size - choices);
  vtllm::structured::Grammar g;
  try {
    g = vtllm::structured::regex_to_grammar(pattern);
  } catch (const vtllm::Error&) {
    return 0;
  }
  vtllm::structured::fuzz::drive(g, data, choices);
  return 0;
}
