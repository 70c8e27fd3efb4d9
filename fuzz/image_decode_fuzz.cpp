// libFuzzer target: decode_image on arbitrary bytes (PNG, JPEG, WebP, GIF, BMP, sniffed) must
// return an image whose buffer matches its size or throw MediaError, never crash or hang; small
// results also go through the Qwen3.5 image processor (resize + patches).
#include <cstddef>
#include <cstdint>

#include "multimodal/image.h"
#include "multimodal/image_processor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vtllm::multimodal;
  ImageLimits limits;
  limits.max_pixels = int64_t{1} << 22;  // keeps each run fast; the checks are the same
  try {
    Image img = decode_image({data, size}, limits);
    if (img.width <= 0 || img.height <= 0 || int64_t(img.rgb.size()) != img.width * img.height * 3)
      __builtin_trap();
    if (img.width * img.height <= 4096) {
      ImageProcessorConfig cfg;
      cfg.min_pixels = 1024;
      cfg.max_pixels = 65536;
      cfg.patch_size = 16;
      VisionInput v = process_image(img, cfg);
      if (int64_t(v.pixel_values.size()) != v.num_patches() * v.patch_dim) __builtin_trap();
    }
  } catch (const MediaError&) {
  }
  return 0;
}
