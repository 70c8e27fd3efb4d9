// The Qwen2-VL / Qwen3.5 image processor (transformers' Qwen2VLImageProcessor, torchvision
// backend; qwen3_5.md §13): smart_resize, antialiased bicubic resize, the fused
// rescale + normalise, and the patch flattening into a VisionInput.
//
// Thread-safety: pure functions; callable from any thread concurrently.
#pragma once

#include <cstdint>
#include <span>

#include "multimodal/image.h"
#include "multimodal/parallel.h"
#include "multimodal/processor_config.h"
#include "multimodal/vision_input.h"

namespace vtllm::multimodal {

struct ResizedSize {
  int64_t height = 0, width = 0;
  bool operator==(const ResizedSize&) const = default;
};

// Python's round() of a double: to nearest, ties to even.
int64_t round_half_even(double x);

// Qwen2VL's smart_resize in Python double arithmetic (§13.1): sides rounded to multiples of
// `factor` (half to even), then scaled into [min_pixels, max_pixels]. Throws MediaError when
// the aspect ratio exceeds 200.
ResizedSize smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                         int64_t max_pixels);

// Qwen3VL's video smart_resize (§14.2): sides under `factor` are first scaled up (truncated),
// and the pixel bounds apply to num_frames (rounded to temporal_factor) * h * w. Throws
// MediaError when num_frames < temporal_factor or the aspect ratio exceeds 200.
ResizedSize smart_resize_video(int64_t num_frames, int64_t height, int64_t width,
                               int64_t temporal_factor, int64_t factor, int64_t min_pixels,
                               int64_t max_pixels);

// Rescale / normalise (per cfg: fused as transformers, f32) and flatten `frames` (equal sizes,
// h and w multiples of patch_size * merge_size; padded by repeating the last frame to a
// multiple of temporal_patch_size) into v.pixel_values, setting the grid and patch_dim.
// Leaves kind, timestamps and hash alone.
// The work is split over `loop` (empty: this thread), with the same result.
void patchify(std::span<const Image* const> frames, const ImageProcessorConfig& cfg, VisionInput& v,
              const ParallelFor& loop = {});

// The processor on one decoded image: kind kImage, grid [1, h/p, w/p], pixel_values, hash.
// Throws MediaError for sizes the processor refuses (aspect ratio > 200). The resize,
// patches and hash are split over `loop` (empty: this thread), with the same result.
VisionInput process_image(const Image& image, const ImageProcessorConfig& cfg,
                          const ParallelFor& loop = {});

}  // namespace vtllm::multimodal
