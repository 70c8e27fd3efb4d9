// One image or video file to the VisionInput the vision tower reads, as the checkpoint's
// processor makes it (qwen3_5.md §13-§14): the decoders (multimodal/image.h,
// multimodal/video_decode.h) and the processors (image_processor.h, video_processor.h).
//
// Thread-safety: pure; call it from any thread concurrently (the server runs it on its
// media pool).
#pragma once

#include <cstdint>
#include <span>

#include "multimodal/image.h"
#include "multimodal/parallel.h"
#include "multimodal/processor_config.h"
#include "multimodal/video_decode.h"
#include "multimodal/vision_input.h"

namespace vtllm::multimodal {

struct MediaLimits {
  ImageLimits image;
  VideoLimits video;
};

// kImage: decode_image (EXIF orientation as transformers' load_image) + process_image.
// kVideo: probe, choose the frames with sample_frame_indices at the container's frame
// rate (VideoInfo::fps: frames over the timestamp span, as torchcodec, transformers 5.17's
// default loader, reports it), decode only those, process_video. Throws MediaError naming
// the problem (a corrupt file, a limit, a build without video support). The processor's
// work is split over `loop` (empty: this thread; decoding stays on this thread).
VisionInput process_media(MediaKind kind, std::span<const uint8_t> bytes,
                          const ProcessorConfig& config, const MediaLimits& limits = {},
                          const ParallelFor& loop = {});

}  // namespace vtllm::multimodal
