#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "multimodal/mrope_positions.h"

namespace vtllm::multimodal {
namespace {

constexpr PlaceholderIds kPads{248056, 248057};
constexpr int32_t kVs = 248053, kVe = 248054;

// qwen3_5.md §16.1's executed example, position for position.
TEST(MropePositions, MatchesTheExecutedExample) {
  // 3 text, vs, 6 image pads (grid 1x4x6), ve, 2 text, vs, 4 video pads, ve, 2 text, vs,
  // 4 video pads, ve, 2 text (video grid 2x4x4).
  std::vector<int32_t> ids;
  for (int32_t id : {11, 12, 13, kVs}) ids.push_back(id);
  for (int i = 0; i < 6; ++i) ids.push_back(kPads.image_pad);
  for (int frame = 0; frame < 2; ++frame) {
    for (int32_t id : {kVe, 14 + 2 * frame, 15 + 2 * frame, kVs}) ids.push_back(id);
    for (int i = 0; i < 4; ++i) ids.push_back(kPads.video_pad);
  }
  for (int32_t id : {kVe, 18, 19}) ids.push_back(id);
  ASSERT_EQ(ids.size(), 29u);
  const std::vector<MediaGrid> grids = {{MediaKind::kImage, 1, 4, 6}, {MediaKind::kVideo, 2, 4, 4}};
  const MropePositions p = compute_mrope_positions(ids, grids, kPads, 2);
  const std::vector<int64_t> t = {0,  1,  2,  3,  4,  4,  4,  4,  4,  4,  7,  8,  9,  10, 11,
                                  11, 11, 11, 13, 14, 15, 16, 17, 17, 17, 17, 19, 20, 21};
  const std::vector<int64_t> h = {0,  1,  2,  3,  4,  4,  4,  5,  5,  5,  7,  8,  9,  10, 11,
                                  11, 12, 12, 13, 14, 15, 16, 17, 17, 18, 18, 19, 20, 21};
  const std::vector<int64_t> w = {0,  1,  2,  3,  4,  5,  6,  4,  5,  6,  7,  8,  9,  10, 11,
                                  12, 11, 12, 13, 14, 15, 16, 17, 18, 17, 18, 19, 20, 21};
  std::vector<int64_t> expected = t;
  expected.insert(expected.end(), h.begin(), h.end());
  expected.insert(expected.end(), w.begin(), w.end());
  EXPECT_EQ(p.positions, expected);
  EXPECT_EQ(p.delta, -7);
  EXPECT_EQ(p.num_tokens(), 29);
  EXPECT_EQ(mrope_decode_position(29, p.delta), 22);
}

TEST(MropePositions, TextOnlyIsOneDimensional) {
  const std::vector<int32_t> ids = {5, 9, 2, 7, 7};
  const MropePositions p = compute_mrope_positions(ids, {}, kPads, 2);
  EXPECT_EQ(p.positions, (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
  EXPECT_EQ(p.delta, 0);
}

// Random prompts built segment by segment; the reference walks the segments it built
// (not the ids) and places every token by formula.
TEST(MropePositions, RandomPromptsMatchASegmentWalk) {
  std::mt19937 rng(24);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> ids;
    std::vector<MediaGrid> grids;
    std::vector<int64_t> rt, rh, rw;
    int64_t cur = 0, maxp = -1;
    auto text = [&](int n) {
      for (int i = 0; i < n; ++i) {
        ids.push_back(int32_t(rng() % 1000));
        rt.push_back(cur), rh.push_back(cur), rw.push_back(cur);
        maxp = std::max(maxp, cur);
        ++cur;
      }
    };
    auto frame = [&](int32_t pad, int64_t h, int64_t w) {
      for (int64_t r = 0; r < h / 2; ++r)
        for (int64_t c = 0; c < w / 2; ++c) {
          ids.push_back(pad);
          rt.push_back(cur), rh.push_back(cur + r), rw.push_back(cur + c);
          maxp = std::max({maxp, cur + r, cur + c});
        }
      cur += std::max(h, w) / 2;
    };
    text(int(rng() % 4));
    const int items = int(rng() % 4);
    for (int i = 0; i < items; ++i) {
      const int64_t h = 2 * (1 + rng() % 5), w = 2 * (1 + rng() % 5);
      text(1);  // vision_start
      if (rng() % 2) {
        grids.push_back({MediaKind::kImage, 1, h, w});
        frame(kPads.image_pad, h, w);
      } else {
        const int64_t t = 1 + rng() % 3;
        grids.push_back({MediaKind::kVideo, t, h, w});
        for (int64_t f = 0; f < t; ++f) {
          text(1 + int(rng() % 3));  // timestamp text + vision_start
          frame(kPads.video_pad, h, w);
          text(1);  // vision_end
        }
      }
      text(1 + int(rng() % 3));
    }
    const MropePositions p = compute_mrope_positions(ids, grids, kPads, 2);
    std::vector<int64_t> expected = rt;
    expected.insert(expected.end(), rh.begin(), rh.end());
    expected.insert(expected.end(), rw.begin(), rw.end());
    ASSERT_EQ(p.positions, expected) << "trial " << trial;
    ASSERT_EQ(p.delta, maxp + 1 - int64_t(ids.size())) << "trial " << trial;
  }
}

TEST(MropePositions, RefusesRunsThatDoNotMatchTheGrids) {
  std::vector<int32_t> ids = {1, kVs};
  ids.insert(ids.end(), 6, kPads.image_pad);
  ids.push_back(kVe);
  const std::vector<MediaGrid> wrong = {{MediaKind::kImage, 1, 4, 4}};
  EXPECT_THROW(compute_mrope_positions(ids, wrong, kPads, 2), Error);
  const std::vector<MediaGrid> none;
  EXPECT_THROW(compute_mrope_positions(ids, none, kPads, 2), Error);
  const std::vector<MediaGrid> extra = {{MediaKind::kImage, 1, 4, 6}, {MediaKind::kImage, 1, 2, 2}};
  EXPECT_THROW(compute_mrope_positions(ids, extra, kPads, 2), Error);
  try {
    compute_mrope_positions(ids, wrong, kPads, 2);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has 6 tokens"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtllm::multimodal
