// libFuzzer target: the safetensors header parser must accept or throw
// vtllm::Error on any bytes, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    vtllm::io::SafetensorsHeader h = vtllm::io::parse_safetensors_header(bytes, size, "fuzz.safetensors");
    // Every accepted range must lie inside the input.
    for (const auto& t : h.tensors)
      if (h.data_start + t.end > size || t.begin > t.end) __builtin_trap();
  } catch (const vtllm::Error&) {
  }
  return 0;
}
