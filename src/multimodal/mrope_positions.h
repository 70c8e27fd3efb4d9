// 3-D MRoPE positions of a multimodal prompt (qwen3_5.md §16, transformers 5.17's
// get_rope_index) and the decode positions that follow it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "multimodal/vision_input.h"

namespace vtllm::multimodal {

// A vision item's patch grid as the prompt sees it, in order of appearance per kind.
struct MediaGrid {
  MediaKind kind = MediaKind::kImage;
  int64_t t = 1, h = 0, w = 0;  // patches; h, w multiples of the merge size
};

// The placeholder token ids of a model (config.json's image_token_id, video_token_id).
struct PlaceholderIds {
  int32_t image_pad = 0;
  int32_t video_pad = 0;
};

// positions: [3, T] row-major (rows temporal, height, width) of the T prompt tokens;
// delta (δ, <= 0): the prompt's largest position + 1 - T, so token i >= T (generated)
// has position i + delta on all three axes.
struct MropePositions {
  std::vector<int64_t> positions;
  int64_t delta = 0;
  int64_t num_tokens() const { return static_cast<int64_t>(positions.size() / 3); }
};

// get_rope_index over the expanded prompt `ids`: each maximal run of image pads takes
// the next image grid of `grids` (t == 1), each run of video pads the next temporal
// index of the next video; text tokens count on. Throws naming the problem when a run's
// length is not the item's h*w/merge^2 tokens, a kind runs out of grids, or grids are
// left over. A prompt without pads gives 0..T-1 on all rows and delta 0.
MropePositions compute_mrope_positions(std::span<const int32_t> ids,
                                       std::span<const MediaGrid> grids, PlaceholderIds pads,
                                       int64_t merge_size);

// The position (every axis) of sequence index `index` >= the prompt length (§16.3).
inline int64_t mrope_decode_position(int64_t index, int64_t delta) { return index + delta; }

}  // namespace vtllm::multimodal
