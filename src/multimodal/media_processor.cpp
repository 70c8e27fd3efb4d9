#include "multimodal/media_processor.h"

#include "multimodal/image_processor.h"
#include "multimodal/video_processor.h"

namespace vtllm::multimodal {

VisionInput process_media(MediaKind kind, std::span<const uint8_t> bytes,
                          const ProcessorConfig& config, const MediaLimits& limits,
                          const ParallelFor& loop) {
  if (kind == MediaKind::kImage)
    return process_image(decode_image(bytes, limits.image), config.image, loop);
  const DecodedVideo v = decode_video(
      bytes,
      [&config](const VideoInfo& info) {
        return sample_frame_indices(info.total_frames, info.fps, config.video);
      },
      limits.video);
  return process_video(v.frames, v.indices, v.info.fps, config.video, loop);
}

}  // namespace vtllm::multimodal
