// Prompt expansion (qwen3_5.md §15.1, transformers 5.17's Qwen3VLProcessor) on token ids.
//
// The chat template writes one <|image_pad|> per image and one <|video_pad|> per video
// (inside <|vision_start|> ... <|vision_end|>). Expansion replaces, in order of
// appearance per kind, each image pad by grid_t*grid_h*grid_w/merge^2 image pads, and
// each video pad by, per temporal index t, the tokens of the text "<ts_t seconds>"
// (ts_t formatted as Python's "{:.1f}") + vision_start + (grid_h*grid_w/merge^2) video
// pads + vision_end. As 5.17, only the pad itself is replaced: the template's own
// vision_start/vision_end stay around a video's expansion.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "multimodal/mrope_positions.h"
#include "multimodal/vision_input.h"

namespace vtllm::multimodal {

// The special token ids the expansion writes (config.json's image_token_id,
// video_token_id, vision_start_token_id, vision_end_token_id).
struct VisionTokenIds {
  int32_t image_pad = 0;
  int32_t video_pad = 0;
  int32_t vision_start = 0;
  int32_t vision_end = 0;
  PlaceholderIds pads() const { return {image_pad, video_pad}; }
};

// A maximal run of one item's placeholder tokens in the expanded prompt.
struct PlaceholderRun {
  int64_t start = 0;
  int64_t length = 0;
};

// Where one item landed: its placeholder runs in order (an image has one, a video one per
// temporal index); feature row r of the item fills the r-th placeholder token of the
// runs taken in order. span_begin/span_end bound every token the item's expansion wrote
// (timestamp text included).
struct ItemPlacement {
  std::vector<PlaceholderRun> runs;
  int64_t span_begin = 0, span_end = 0;
  int64_t num_placeholders() const;
};

struct ExpandedPrompt {
  std::vector<int32_t> ids;
  std::vector<ItemPlacement> placements;  // one per input item, in the items' order
};

// Python's format(x, ".1f"): x rounded to one decimal, correctly from its exact binary
// value, ties to even ("0.25" -> "0.2", "0.35" -> "0.3", since 0.35 is below 0.35).
std::string format_fixed1(double x);

// The tokenizer's encoding of a plain text (no special tokens added).
using EncodeText = std::function<std::vector<int32_t>(std::string_view)>;

// Expands `ids` for `items` (images and videos, each kind in order of appearance; the
// k-th image of `items` fills the k-th image pad). Video items need grid_t timestamps.
// Throws naming the kind and the counts when pads and items of a kind disagree.
ExpandedPrompt expand_prompt(std::span<const int32_t> ids,
                             std::span<const VisionInput* const> items,
                             const VisionTokenIds& tokens, int64_t merge_size,
                             const EncodeText& encode);

// The grids of `items` as compute_mrope_positions takes them.
std::vector<MediaGrid> media_grids(std::span<const VisionInput* const> items);

}  // namespace vtllm::multimodal
