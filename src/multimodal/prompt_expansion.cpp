#include "multimodal/prompt_expansion.h"

#include <charconv>

#include "base/error.h"

namespace vtllm::multimodal {

int64_t ItemPlacement::num_placeholders() const {
  int64_t n = 0;
  for (const PlaceholderRun& r : runs) n += r.length;
  return n;
}

std::string format_fixed1(double x) {
  // std::to_chars with a precision is printf's %.*f: correctly rounded from the exact
  // binary value, ties to even, as Python's float formatting.
  char buf[400];
  const auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, 1);
  VT_CHECK(res.ec == std::errc(), "format_fixed1: cannot format ", x);
  return std::string(buf, res.ptr);
}

std::vector<MediaGrid> media_grids(std::span<const VisionInput* const> items) {
  std::vector<MediaGrid> grids;
  for (const VisionInput* v : items) grids.push_back({v->kind, v->grid_t, v->grid_h, v->grid_w});
  return grids;
}

ExpandedPrompt expand_prompt(std::span<const int32_t> ids,
                             std::span<const VisionInput* const> items,
                             const VisionTokenIds& tokens, int64_t merge_size,
                             const EncodeText& encode) {
  VT_CHECK(merge_size >= 1, "prompt expansion: merge_size = ", merge_size, ", expected >= 1");
  // Items of each kind in order; the k-th pad of a kind takes the k-th item of that kind.
  std::vector<size_t> of_kind[2];
  for (size_t i = 0; i < items.size(); ++i) {
    const VisionInput& v = *items[i];
    VT_CHECK(v.grid_t >= 1 && v.grid_h > 0 && v.grid_w > 0 && v.grid_h % merge_size == 0 &&
                 v.grid_w % merge_size == 0,
             "prompt expansion: item ", i, " has grid (", v.grid_t, ", ", v.grid_h, ", ", v.grid_w,
             "), expected positive h, w multiples of the merge size ", merge_size);
    if (v.kind == MediaKind::kVideo)
      VT_CHECK(int64_t(v.timestamps.size()) == v.grid_t, "prompt expansion: video item ", i,
               " has ", v.timestamps.size(), " timestamps for grid_t = ", v.grid_t);
    of_kind[v.kind == MediaKind::kImage ? 0 : 1].push_back(i);
  }
  size_t pads[2] = {0, 0};
  for (int32_t id : ids) {
    if (id == tokens.image_pad) ++pads[0];
    if (id == tokens.video_pad) ++pads[1];
  }
  for (int k = 0; k < 2; ++k)
    if (pads[k] != of_kind[k].size())
      VT_THROW("prompt expansion: the prompt has ", pads[k], k == 0 ? " image" : " video",
               " placeholder", pads[k] == 1 ? "" : "s", " (",
               k == 0 ? "<|image_pad|>" : "<|video_pad|>", ") but ", of_kind[k].size(),
               k == 0 ? " image" : " video", of_kind[k].size() == 1 ? " was" : "s were", " given");

  ExpandedPrompt out;
  out.placements.resize(items.size());
  size_t next[2] = {0, 0};
  const int64_t merge2 = merge_size * merge_size;
  for (int32_t id : ids) {
    const bool image = id == tokens.image_pad, video = id == tokens.video_pad;
    if (!image && !video) {
      out.ids.push_back(id);
      continue;
    }
    const size_t item = of_kind[image ? 0 : 1][next[image ? 0 : 1]++];
    const VisionInput& v = *items[item];
    ItemPlacement& p = out.placements[item];
    p.span_begin = int64_t(out.ids.size());
    if (image) {
      const int64_t n = v.num_patches() / merge2;
      p.runs.push_back({int64_t(out.ids.size()), n});
      out.ids.insert(out.ids.end(), size_t(n), tokens.image_pad);
    } else {
      const int64_t per_frame = v.grid_h * v.grid_w / merge2;
      for (int64_t t = 0; t < v.grid_t; ++t) {
        const std::vector<int32_t> ts =
            encode("<" + format_fixed1(v.timestamps[size_t(t)]) + " seconds>");
        out.ids.insert(out.ids.end(), ts.begin(), ts.end());
        out.ids.push_back(tokens.vision_start);
        p.runs.push_back({int64_t(out.ids.size()), per_frame});
        out.ids.insert(out.ids.end(), size_t(per_frame), tokens.video_pad);
        out.ids.push_back(tokens.vision_end);
      }
    }
    p.span_end = int64_t(out.ids.size());
  }
  return out;
}

}  // namespace vtllm::multimodal
