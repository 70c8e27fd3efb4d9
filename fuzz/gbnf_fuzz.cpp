// libFuzzer target: any bytes as GBNF must parse or throw vtllm::Error; a
// parsed grammar must compile or throw, and its matcher's masks must agree
// with accept_token on a small vocabulary. Never crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "structured/grammar.h"
#include "structured_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  // The first 32 bytes choose tokens; the rest is the grammar.
  const size_t choices = size < 32 ? size : 32;
  const std::string_view text(reinterpret_cast<const char*>(data) + choices, size - choices);
  vtllm::structured::Grammar g;
  try {
    g = vtllm::structured::parse_gbnf(text);
  } catch (const vtllm::Error&) {
    return 0;
  }
  vtllm::structured::fuzz::drive(g, data, choices);
  return 0;
}
