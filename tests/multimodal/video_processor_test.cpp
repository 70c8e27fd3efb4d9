// Frame sampling and timestamps against qwen3_5.md §14's executed example and hand-computed
// numpy values; the clip processor against per-frame resize + patchify.
#include "multimodal/video_processor.h"

#include <gtest/gtest.h>

#include "multimodal/image_processor.h"
#include "multimodal/resize.h"
#include "test_util.h"

namespace vtllm::multimodal {
namespace {

VideoProcessorConfig qwen35_video() {
  VideoProcessorConfig c;
  c.frame.min_pixels = 4096;
  c.frame.max_pixels = 25165824;
  return c;
}

TEST(SampleFrames, SpecExample) {
  // N = 95, f = 30: n = int(95 / 30 * 2) = 6, linspace(0, 94, 6) rounded half to even.
  EXPECT_EQ(sample_frame_indices(95, 30.0, qwen35_video()),
            (std::vector<int64_t>{0, 19, 38, 56, 75, 94}));
}

TEST(SampleFrames, ClampsRoundsAndDefaults) {
  VideoProcessorConfig c = qwen35_video();
  // n = int(10 / 24 * 2) = 0 -> min_frames 4: linspace(0, 9, 4) = 0, 3, 6, 9.
  EXPECT_EQ(sample_frame_indices(10, 24.0, c), (std::vector<int64_t>{0, 3, 6, 9}));
  // Unknown fps is 24: the same.
  EXPECT_EQ(sample_frame_indices(10, std::nullopt, c), (std::vector<int64_t>{0, 3, 6, 9}));
  // Fewer frames than min_frames: all of them.
  EXPECT_EQ(sample_frame_indices(3, 10.0, c), (std::vector<int64_t>{0, 1, 2}));
  // linspace(0, 4, 3) = 0, 2, 4; linspace(0, 5, 3) = 0, 2.5 -> 2 (half to even), 5.
  c.num_frames = 3;
  EXPECT_EQ(sample_frame_indices(5, 30.0, c), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(sample_frame_indices(6, 30.0, c), (std::vector<int64_t>{0, 2, 5}));
  c.num_frames = 4;  // more than the file has: indices repeat, as numpy gives
  EXPECT_EQ(sample_frame_indices(2, 30.0, c), (std::vector<int64_t>{0, 0, 1, 1}));
  c.num_frames.reset();
  c.max_frames = 5;
  EXPECT_EQ(sample_frame_indices(1000, 30.0, c).size(), 5u);
  c.do_sample_frames = false;
  EXPECT_EQ(sample_frame_indices(3, 30.0, c), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_THROW(sample_frame_indices(0, 30.0, c), MediaError);
}

TEST(Timestamps, TextIsPythonFormatting) {
  EXPECT_EQ(timestamp_text(0.25), "<0.2 seconds>");  // exact tie: to even
  EXPECT_EQ(timestamp_text(0.35), "<0.3 seconds>");  // 0.35 is below .35 in binary
  EXPECT_EQ(timestamp_text(1.5666666666666667), "<1.6 seconds>");
  EXPECT_EQ(timestamp_text(12.0), "<12.0 seconds>");
}

TEST(ProcessVideo, SpecExampleGridTimestampsAndPixels) {
  VideoProcessorConfig c = qwen35_video();
  const std::vector<int64_t> idx = sample_frame_indices(95, 30.0, c);
  std::vector<Image> frames;
  for (int64_t i : idx) frames.push_back(testing::synth(uint64_t(200000 + i), 48, 64, "smooth"));
  VisionInput v = process_video(frames, idx, 30.0, c);
  EXPECT_EQ(v.kind, MediaKind::kVideo);
  const ResizedSize s = smart_resize_video(6, 48, 64, 2, 32, 4096, 25165824);
  EXPECT_EQ(v.grid_t, 3);
  EXPECT_EQ(v.grid_h, s.height / 16);
  EXPECT_EQ(v.grid_w, s.width / 16);
  ASSERT_EQ(v.timestamps.size(), 3u);
  EXPECT_DOUBLE_EQ(v.timestamps[0], (0 / 30.0 + 19 / 30.0) / 2);
  EXPECT_EQ(timestamp_text(v.timestamps[0]), "<0.3 seconds>");
  EXPECT_EQ(timestamp_text(v.timestamps[1]), "<1.6 seconds>");
  EXPECT_EQ(timestamp_text(v.timestamps[2]), "<2.8 seconds>");
  std::vector<Image> resized;
  for (const Image& f : frames) resized.push_back(resize_bicubic_aa(f, s.height, s.width));
  std::vector<const Image*> ptrs;
  for (const Image& f : resized) ptrs.push_back(&f);
  VisionInput ref;
  patchify(ptrs, c.frame, ref);
  EXPECT_EQ(v.pixel_values, ref.pixel_values);
}

TEST(ProcessVideo, OddFrameCountRepeatsTheLastFrameAndItsIndex) {
  VideoProcessorConfig c = qwen35_video();
  std::vector<Image> frames;
  const std::vector<int64_t> idx = {0, 1, 2};
  for (int64_t i : idx) frames.push_back(testing::synth(uint64_t(50 + i), 64, 64, "noise"));
  VisionInput v = process_video(frames, idx, 10.0, c);
  EXPECT_EQ(v.grid_t, 2);
  ASSERT_EQ(v.timestamps.size(), 2u);
  EXPECT_DOUBLE_EQ(v.timestamps[1], 0.2);  // (2/10 + 2/10) / 2
  // Temporal index 1 holds frame 2 twice: its tt = 0 and tt = 1 halves are equal.
  const int64_t rows = v.grid_h * v.grid_w, half = 16 * 16;
  const float* row = &v.pixel_values[size_t(rows * v.patch_dim)];
  for (int64_t ch = 0; ch < 3; ++ch)
    for (int64_t k = 0; k < half; ++k)
      ASSERT_EQ(row[ch * 2 * half + k], row[ch * 2 * half + half + k]);
}

TEST(ProcessVideo, RefusesBadClips) {
  VideoProcessorConfig c = qwen35_video();
  std::vector<Image> one = {testing::synth(1, 64, 64, "noise")};
  const std::vector<int64_t> i1 = {0};
  EXPECT_THROW(process_video(one, i1, 30.0, c), MediaError);  // fewer than 2 frames
  std::vector<Image> mixed = {testing::synth(1, 64, 64, "noise"),
                              testing::synth(2, 64, 48, "noise")};
  const std::vector<int64_t> i2 = {0, 1};
  EXPECT_THROW(process_video(mixed, i2, 30.0, c), MediaError);
}

}  // namespace
}  // namespace vtllm::multimodal
