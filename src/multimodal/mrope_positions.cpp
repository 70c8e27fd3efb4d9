#include "multimodal/mrope_positions.h"

#include <algorithm>

#include "base/error.h"

namespace vtllm::multimodal {
namespace {

const char* kind_name(MediaKind k) { return k == MediaKind::kImage ? "image" : "video"; }

}  // namespace

MropePositions compute_mrope_positions(std::span<const int32_t> ids,
                                       std::span<const MediaGrid> grids, PlaceholderIds pads,
                                       int64_t merge_size) {
  VT_CHECK(merge_size >= 1, "mrope positions: merge_size = ", merge_size, ", expected >= 1");
  // One (1, h, w) frame per image and per temporal index of a video (§16.1), per kind.
  struct Frame {
    int64_t h, w;
    size_t item;
  };
  std::vector<Frame> frames[2];
  for (size_t i = 0; i < grids.size(); ++i) {
    const MediaGrid& g = grids[i];
    VT_CHECK(g.t >= 1 && g.h > 0 && g.w > 0 && g.h % merge_size == 0 && g.w % merge_size == 0,
             "mrope positions: ", kind_name(g.kind), " item ", i, " has grid (", g.t, ", ", g.h,
             ", ", g.w, "), expected t >= 1 and h, w positive multiples of ", merge_size);
    VT_CHECK(g.kind == MediaKind::kVideo || g.t == 1, "mrope positions: image item ", i,
             " has grid_t = ", g.t, ", expected 1");
    for (int64_t t = 0; t < g.t; ++t)
      frames[g.kind == MediaKind::kImage ? 0 : 1].push_back({g.h, g.w, i});
  }
  size_t next[2] = {0, 0};

  const int64_t T = static_cast<int64_t>(ids.size());
  MropePositions out;
  out.positions.assign(static_cast<size_t>(3 * T), 0);
  int64_t* pt = out.positions.data();
  int64_t* ph = pt + T;
  int64_t* pw = ph + T;
  int64_t cur = 0, max_pos = -1;
  auto kind_of = [&](int32_t id) {
    return id == pads.image_pad ? 0 : id == pads.video_pad ? 1 : 2;
  };
  for (int64_t i = 0; i < T;) {
    const int k = kind_of(ids[size_t(i)]);
    int64_t end = i + 1;
    while (end < T && kind_of(ids[size_t(end)]) == k) ++end;
    const int64_t n = end - i;
    if (k == 2) {
      for (int64_t j = 0; j < n; ++j) pt[i + j] = ph[i + j] = pw[i + j] = cur + j;
      max_pos = std::max(max_pos, cur + n - 1);
      cur += n;
    } else {
      const MediaKind kind = k == 0 ? MediaKind::kImage : MediaKind::kVideo;
      if (next[k] == frames[k].size())
        VT_THROW("mrope positions: the ", kind_name(kind), " placeholder run at token ", i,
                 " has no ", kind_name(kind), " grid left (", frames[k].size(), " ",
                 kind == MediaKind::kImage ? "images" : "video frame pairs", " given)");
      const Frame f = frames[k][next[k]++];
      const int64_t mh = f.h / merge_size, mw = f.w / merge_size;
      if (n != mh * mw)
        VT_THROW("mrope positions: the ", kind_name(kind), " placeholder run at token ", i, " has ",
                 n, " tokens, but ", kind_name(kind), " item ", f.item, " (grid h ", f.h, ", w ",
                 f.w, ") needs ", mh * mw);
      for (int64_t r = 0; r < mh; ++r)
        for (int64_t c = 0; c < mw; ++c) {
          const int64_t j = i + r * mw + c;
          pt[j] = cur;
          ph[j] = cur + r;
          pw[j] = cur + c;
        }
      max_pos = std::max(max_pos, cur + std::max(mh, mw) - 1);
      cur += std::max(mh, mw);
    }
    i = end;
  }
  for (int k = 0; k < 2; ++k)
    if (next[k] != frames[k].size())
      VT_THROW("mrope positions: ", frames[k].size() - next[k], " ",
               k == 0 ? "image grids" : "video frame-pair grids",
               " have no placeholder run in the prompt (", next[k], " used of ", frames[k].size(),
               ")");
  out.delta = max_pos + 1 - T;
  return out;
}

}  // namespace vtllm::multimodal
