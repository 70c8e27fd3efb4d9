#include "multimodal/video_processor.h"

#include <algorithm>
#include <cstdio>

#include "multimodal/content_hash.h"
#include "multimodal/image_processor.h"
#include "multimodal/resize.h"

namespace vtllm::multimodal {

std::vector<int64_t> sample_frame_indices(int64_t total_frames, std::optional<double> source_fps,
                                          const VideoProcessorConfig& cfg) {
  if (total_frames <= 0) throw MediaError("video has no frames");
  std::vector<int64_t> idx;
  if (!cfg.do_sample_frames) {
    for (int64_t i = 0; i < total_frames; ++i) idx.push_back(i);
    return idx;
  }
  int64_t n;
  if (cfg.num_frames) {
    n = *cfg.num_frames;
  } else {
    const double fps = source_fps.value_or(kDefaultVideoFps);
    if (!(fps > 0.0)) throw MediaError(str_cat("video has an invalid frame rate ", fps));
    n = int64_t(double(total_frames) / fps * cfg.fps);  // Python int(): truncation
    n = std::min({std::max(n, cfg.min_frames), cfg.max_frames, total_frames});
  }
  if (n <= 0) throw MediaError("video sampling selects no frames");
  // numpy.linspace(0, total - 1, n): i * step with the last value set to the stop exactly.
  const double stop = double(total_frames - 1);
  const double step = n > 1 ? stop / double(n - 1) : 0.0;
  idx.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) idx[size_t(i)] = round_half_even(double(i) * step);
  if (n > 1) idx.back() = total_frames - 1;
  return idx;
}

VisionInput process_video(std::span<const Image> frames, std::span<const int64_t> frame_indices,
                          std::optional<double> source_fps, const VideoProcessorConfig& cfg,
                          const ParallelFor& loop) {
  const ImageProcessorConfig& fc = cfg.frame;
  VT_CHECK(frames.size() == frame_indices.size(), "process_video: ", frames.size(), " frames for ",
           frame_indices.size(), " indices");
  if (frames.empty()) throw MediaError("video has no frames");
  const int64_t h = frames[0].height, w = frames[0].width;
  for (const Image& f : frames)
    if (f.height != h || f.width != w)
      throw MediaError(
          str_cat("video frames change size (", w, "x", h, " then ", f.width, "x", f.height, ")"));
  const int64_t n = int64_t(frames.size());
  ResizedSize s{h, w};
  if (fc.do_resize)
    s = smart_resize_video(n, h, w, fc.temporal_patch_size, fc.factor(), fc.min_pixels,
                           fc.max_pixels);
  std::vector<Image> resized;
  std::vector<const Image*> ptrs;
  if (s.height != h || s.width != w) {
    resized.resize(frames.size());
    parallel_for(loop, n, [&](int64_t i) {
      resized[size_t(i)] = resize_bicubic_aa(frames[size_t(i)], s.height, s.width);
    });
    for (const Image& f : resized) ptrs.push_back(&f);
  } else {
    for (const Image& f : frames) ptrs.push_back(&f);
  }
  VisionInput v;
  v.kind = MediaKind::kVideo;
  patchify(ptrs, fc, v, loop);
  // Qwen3VLProcessor._calculate_timestamps with merge_size = temporal_patch_size.
  const double fps = source_fps.value_or(kDefaultVideoFps);
  std::vector<int64_t> idx(frame_indices.begin(), frame_indices.end());
  const size_t tps = size_t(fc.temporal_patch_size);
  while (idx.size() % tps != 0) idx.push_back(idx.back());
  for (size_t i = 0; i < idx.size(); i += tps)
    v.timestamps.push_back((double(idx[i]) / fps + double(idx[i + tps - 1]) / fps) / 2);
  v.hash = content_hash(v, loop);
  return v;
}

std::string timestamp_text(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "<%.1f seconds>", seconds);
  return buf;
}

}  // namespace vtllm::multimodal
