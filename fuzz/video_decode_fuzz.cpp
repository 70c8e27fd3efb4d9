// libFuzzer target: the video decoder must return frames or throw MediaError on any bytes,
// never crash, hang or read out of bounds; every frame it returns has the probed size.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "multimodal/video_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vtllm::multimodal;
  VideoLimits limits;  // small, so one input costs little
  limits.max_pixels = 1 << 20;
  limits.max_frames = 2000;
  limits.max_duration_s = 600;
  limits.max_output_bytes = 1 << 24;
  try {
    DecodedVideo v = decode_video(
        std::span<const uint8_t>(data, size),
        [](const VideoInfo& info) {
          return std::vector<int64_t>{0, info.total_frames / 2, info.total_frames - 1};
        },
        limits);
    if (v.frames.size() != 3) __builtin_trap();
    for (const Image& img : v.frames)
      if (img.width != v.info.width || img.height != v.info.height ||
          img.rgb.size() != static_cast<size_t>(img.width * img.height * 3))
        __builtin_trap();
  } catch (const MediaError&) {
  }
  return 0;
}
