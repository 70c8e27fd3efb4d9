// libFuzzer target: server/json_parse.h's parse_json against the reference it
// replaces, nlohmann::json::parse(text, nullptr, false). Any input, valid UTF-8
// or not: both must accept or both reject, and an accepted value must be the
// same tree (number kinds and float bits included). Aborts on a mismatch.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "../tests/server/json_identical.h"  // the check json_parse_test uses too
#include "server/json_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json want = nlohmann::json::parse(text, nullptr, false);
  const std::optional<nlohmann::json> got = vtllm::server::parse_json(text);
  bool same = got.has_value() == !want.is_discarded();
  if (same && got) {
    same = vtllm::server::json_identical(*got, want);
    // == and dump() recurse per level: only where the nesting is shallow enough.
    if (size <= 4096) same = same && *got == want && got->dump() == want.dump();
  }
  if (!same) {
    std::fprintf(stderr, "json_body_fuzz: parse_json %s, nlohmann %s\n",
                 got ? got->dump().c_str() : "rejects",
                 want.is_discarded() ? "rejects" : want.dump().c_str());
    std::abort();
  }
  return 0;
}
