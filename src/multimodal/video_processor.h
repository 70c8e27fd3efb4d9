// The Qwen3-VL / Qwen3.5 video processor (transformers' Qwen3VLVideoProcessor; qwen3_5.md
// §14) on decoded frames: frame sampling, one resize for the whole clip, temporal patching,
// and the per-temporal-index timestamps the prompt expansion renders.
//
// Thread-safety: pure functions; callable from any thread concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "multimodal/image.h"
#include "multimodal/parallel.h"
#include "multimodal/processor_config.h"
#include "multimodal/vision_input.h"

namespace vtllm::multimodal {

// Source fps assumed when the container gives none (transformers' default, with a warning).
inline constexpr double kDefaultVideoFps = 24.0;

// The frame indices (of `total_frames` in the file) the processor keeps, so the decoder
// decodes only those: all frames when !cfg.do_sample_frames; else n = cfg.num_frames, or
// int(total / fps_src * cfg.fps) clamped to [min_frames, max_frames] and to total, and
// indices = round_half_even(linspace(0, total - 1, n)) as numpy computes it (may repeat).
std::vector<int64_t> sample_frame_indices(int64_t total_frames, std::optional<double> source_fps,
                                          const VideoProcessorConfig& cfg);

// The processor on `frames` (the decoded frames at `frame_indices`, in order, equal sizes):
// kind kVideo, grid [ceil(n / tps), h/p, w/p], pixel_values, timestamps (seconds per temporal
// index: mean of its first and last frame's index / fps, indices padded by repeating the
// last), hash. Throws MediaError for clips the processor refuses (fewer frames than
// temporal_patch_size, aspect ratio > 200). Frames, patches and hash are split over `loop`
// (empty: this thread), with the same result.
VisionInput process_video(std::span<const Image> frames, std::span<const int64_t> frame_indices,
                          std::optional<double> source_fps, const VideoProcessorConfig& cfg,
                          const ParallelFor& loop = {});

// The prompt text of a timestamp: "<%.1f seconds>" (correctly rounded, as Python formats).
std::string timestamp_text(double seconds);

}  // namespace vtllm::multimodal
