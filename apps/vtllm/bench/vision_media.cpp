#include "bench/vision_media.h"

#include <jpeglib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "base/hash.h"

namespace vtllm::bench {

namespace {

// The scene at (x, y) shifted by (dx, dy): three gradients, two soft discs, and noise
// of +-12 levels hashed from the pixel and the seed.
void fill_scene(std::vector<uint8_t>& rgb, int64_t w, int64_t h, int64_t dx, int64_t dy,
                uint32_t seed) {
  rgb.resize(size_t(w * h * 3));
  const double cx = 0.3 * double(w), cy = 0.4 * double(h), r2 = 0.04 * double(w * w);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const double sx = double(x + dx), sy = double(y + dy);
      const double disc = std::exp(-((sx - cx) * (sx - cx) + (sy - cy) * (sy - cy)) / r2);
      const uint64_t n = splitmix64(uint64_t(seed) << 40 ^ uint64_t(y) << 20 ^ uint64_t(x));
      const double base[3] = {255.0 * sx / double(w), 255.0 * sy / double(h),
                              127.0 + 100.0 * std::sin((sx + sy) * 0.02 + double(seed))};
      for (int ch = 0; ch < 3; ++ch) {
        const double noise = double(int64_t((n >> (8 * ch)) & 0xff) % 25 - 12);
        const double v = base[ch] * (1.0 - 0.6 * disc) + 200.0 * disc * (ch == 0) + noise;
        rgb[size_t((y * w + x) * 3 + ch)] = uint8_t(std::clamp(v, 0.0, 255.0));
      }
    }
}

}  // namespace

std::vector<uint8_t> synth_jpeg(int64_t width, int64_t height, uint32_t seed) {
  VT_REQUIRE(width > 0 && height > 0 && width <= 65500 && height <= 65500, "synth_jpeg: bad size ",
             width, "x", height);
  std::vector<uint8_t> rgb;
  fill_scene(rgb, width, height, 0, 0, seed);
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = JDIMENSION(width);
  c.image_height = JDIMENSION(height);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = &rgb[size_t(c.next_scanline) * size_t(width) * 3];
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> out(mem, mem + size);
  jpeg_destroy_compress(&c);
  std::free(mem);
  return out;
}

multimodal::Image synth_frame(int64_t width, int64_t height, int64_t index, uint32_t seed) {
  multimodal::Image im;
  im.width = width;
  im.height = height;
  fill_scene(im.rgb, width, height, 3 * index, 2 * index, seed);
  return im;
}

}  // namespace vtllm::bench
