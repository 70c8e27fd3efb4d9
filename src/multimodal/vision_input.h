// One image or video after its processor (qwen3_5.md §13-§14): the patch rows the vision
// tower reads, its grid, and what the prompt expansion and the caches need.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace vtllm::multimodal {

enum class MediaKind { kImage, kVideo };

struct VisionInput {
  MediaKind kind = MediaKind::kImage;
  // Patch grid (temporal, height, width) in patches; grid_h and grid_w are multiples of
  // the merge size. Images have grid_t = 1.
  int64_t grid_t = 1, grid_h = 0, grid_w = 0;
  // in_channels * temporal_patch_size * patch_size^2 (1536 for Qwen3.5).
  int64_t patch_dim = 0;
  // [grid_t * grid_h * grid_w, patch_dim] row-major f32, in the processor's patch order.
  std::vector<float> pixel_values;
  // Video only: seconds of each temporal index (§14.4), grid_t entries.
  std::vector<double> timestamps;
  // 128-bit content hash of kind, grid and pixel_values: the encoder cache's key and the
  // prefix cache's extra key (equal inputs, equal hash).
  std::array<uint64_t, 2> hash{};

  int64_t num_patches() const { return grid_t * grid_h * grid_w; }
  // LLM placeholder tokens this item expands to (all temporal indices).
  int64_t num_tokens(int64_t merge_size) const {
    return num_patches() / (merge_size * merge_size);
  }
};

}  // namespace vtllm::multimodal
