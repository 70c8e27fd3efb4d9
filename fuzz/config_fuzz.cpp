// libFuzzer target: config.json and generation_config.json parsing, and the
// parameter list of every accepted config, must accept or throw vtllm::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "io/config.h"
#include "models/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    vtllm::io::ModelConfig c = vtllm::models::parse_model_config(text, "config.json");
    // Enumerating a 16k-layer model is correct but slow; keep iterations fast.
    if (c.text.num_hidden_layers <= 256 && (!c.vision || c.vision->depth <= 256)) {
      auto specs = vtllm::models::declare_params(c);
      (void)vtllm::io::param_totals(specs);
    }
  } catch (const vtllm::Error&) {
  }
  try {
    (void)vtllm::io::parse_generation_config(text, "generation_config.json");
  } catch (const vtllm::Error&) {
  }
  return 0;
}
