// A decoded picture: 8-bit RGB, the form every image and video decoder hands to the processors.
#pragma once

#include <cstdint>
#include <vector>

namespace vtllm::multimodal {

// width x height pixels, rgb holds height * width * 3 bytes, row-major HWC (R, G, B).
struct Image {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

}  // namespace vtllm::multimodal
