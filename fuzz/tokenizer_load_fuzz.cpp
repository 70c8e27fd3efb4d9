// libFuzzer: load arbitrary bytes as tokenizer.json. A bad file must end in
// vtllm::Error (never a crash, a hang or another exception); a file that
// loads must encode and decode a fixed text.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const vtllm::text::Tokenizer tok = vtllm::text::Tokenizer::from_json(json, "fuzz.json");
    const auto ids = tok.encode("Hello <s> w\xC3\xB6rld 123 \xF0\x9F\x98\x80!", true);
    (void)tok.decode(ids, true);
    (void)tok.decode(ids, false);
  } catch (const vtllm::Error&) {
    // a clear load error is the expected outcome for most inputs
  }
  return 0;
}
