// smart_resize against qwen3_5.md's executed examples, the patch order against a brute-force
// reading of §13.4, and the normalisation against double arithmetic.
#include "multimodal/image_processor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "multimodal/content_hash.h"
#include "multimodal/resize.h"
#include "test_util.h"

namespace vtllm::multimodal {
namespace {

ImageProcessorConfig qwen35_image() {
  ImageProcessorConfig c;
  c.min_pixels = 65536;
  c.max_pixels = 16777216;
  c.patch_size = 16;
  c.image_mean = {0.5, 0.5, 0.5};
  c.image_std = {0.5, 0.5, 0.5};
  return c;
}

TEST(SmartResize, SpecExamples) {
  struct Case {
    int64_t h, w, oh, ow;
  } cases[] = {{480, 640, 480, 640},  {48, 80, 224, 352},       {80, 80, 256, 256},
               {100, 100, 256, 256},  {1080, 1920, 1088, 1920}, {5000, 5000, 4096, 4096},
               {300, 2000, 288, 1984}};
  for (const Case& c : cases) {
    ResizedSize r = smart_resize(c.h, c.w, 32, 65536, 16777216);
    EXPECT_EQ(r, (ResizedSize{c.oh, c.ow}))
        << c.h << "x" << c.w << " -> " << r.height << "x" << r.width;
  }
}

TEST(SmartResize, RoundsHalfToEvenAndRefusesExtremeAspect) {
  EXPECT_EQ(round_half_even(62.5), 62);
  EXPECT_EQ(round_half_even(63.5), 64);
  EXPECT_EQ(round_half_even(-0.5), 0);
  EXPECT_EQ(round_half_even(2.5000000001), 3);
  // 2000 / 32 = 62.5 -> 62 (not 63): with no scaling the width stays 1984.
  EXPECT_EQ(smart_resize(480, 2000, 32, 1, int64_t{1} << 40).width, 1984);
  EXPECT_NO_THROW(smart_resize(1, 200, 32, 65536, 16777216));
  try {
    smart_resize(1, 201, 32, 65536, 16777216);
    FAIL() << "no error";
  } catch (const MediaError& e) {
    EXPECT_NE(std::string(e.what()).find("aspect ratio"), std::string::npos) << e.what();
  }
}

TEST(SmartResize, VideoExamples) {
  // 4 frames of 10x10: scaled up to 32x32 first, then to the 4096-pixel floor over 4 frames.
  EXPECT_EQ(smart_resize_video(4, 10, 10, 2, 32, 4096, 25165824), (ResizedSize{32, 32}));
  EXPECT_EQ(smart_resize_video(6, 480, 640, 2, 32, 4096, 25165824), (ResizedSize{480, 640}));
  // 768 frames of 1080p exceed 25165824: beta from n * H * W.
  const double beta = std::sqrt(768.0 * 1080 * 1920 / 25165824);
  const int64_t h = std::max<int64_t>(32, int64_t(std::floor(1080 / beta / 32)) * 32);
  const int64_t w = std::max<int64_t>(32, int64_t(std::floor(1920 / beta / 32)) * 32);
  EXPECT_EQ(smart_resize_video(768, 1080, 1920, 2, 32, 4096, 25165824), (ResizedSize{h, w}));
  EXPECT_THROW(smart_resize_video(1, 64, 64, 2, 32, 4096, 25165824), MediaError);
}

// The value at (row, k) of pixel_values read straight off §13.4's nested loops.
float spec_value(const std::vector<const Image*>& frames, const ImageProcessorConfig& c, int64_t gw,
                 int64_t row, int64_t k) {
  const int64_t p = c.patch_size, m = c.merge_size, tps = c.temporal_patch_size;
  const int64_t gh_rows = int64_t(frames[0]->height) / p;
  const int64_t per_frame = gh_rows * gw;
  const int64_t t = row / per_frame, in_t = row % per_frame;
  const int64_t block = in_t / (m * m), in_block = in_t % (m * m);
  const int64_t by = block / (gw / m), bx = block % (gw / m);
  const int64_t r = by * m + in_block / m, col = bx * m + in_block % m;
  const int64_t ch = k / (tps * p * p), tt = (k / (p * p)) % tps, y = (k / p) % p, x = k % p;
  const int64_t f = std::min<int64_t>(t * tps + tt, int64_t(frames.size()) - 1);
  const uint8_t u =
      frames[size_t(f)]->rgb[size_t(((r * p + y) * frames[0]->width + col * p + x) * 3 + ch)];
  const double mean = c.image_mean[size_t(ch)] / c.rescale_factor;
  const double std_ = c.image_std[size_t(ch)] / c.rescale_factor;
  return float((double(u) - double(float(mean))) / double(float(std_)));
}

TEST(Patchify, OrderAndValuesFollowTheSpec) {
  ImageProcessorConfig c = qwen35_image();
  c.patch_size = 4;  // small patches, same loops
  Image a = testing::synth(7, 16, 24, "noise");
  Image b = testing::synth(8, 16, 24, "noise");
  Image d = testing::synth(9, 16, 24, "noise");
  std::vector<const Image*> frames = {&a, &b, &d};  // odd: the last is repeated
  VisionInput v;
  patchify(frames, c, v);
  ASSERT_EQ(v.grid_t, 2);
  ASSERT_EQ(v.grid_h, 4);
  ASSERT_EQ(v.grid_w, 6);
  ASSERT_EQ(v.patch_dim, 3 * 2 * 4 * 4);
  ASSERT_EQ(int64_t(v.pixel_values.size()), v.num_patches() * v.patch_dim);
  for (int64_t row = 0; row < v.num_patches(); ++row)
    for (int64_t k = 0; k < v.patch_dim; ++k)
      ASSERT_EQ(v.pixel_values[size_t(row * v.patch_dim + k)],
                spec_value(frames, c, v.grid_w, row, k))
          << "row " << row << " k " << k;
}

TEST(Patchify, ClipMeanStdAndUnfusedPaths) {
  Image a = testing::synth(3, 28, 28, "noise");
  std::vector<const Image*> frames = {&a};
  ImageProcessorConfig c;  // class defaults: patch 14, CLIP mean/std
  VisionInput v;
  patchify(frames, c, v);
  // Fused: mean/rf and std/rf rounded to float32, then (x - mean) / std in float32.
  const uint8_t u0 = a.rgb[0];
  const float mean = float(0.48145466f * float(1.0 / c.rescale_factor));
  const float std_ = float(0.26862954f * float(1.0 / c.rescale_factor));
  EXPECT_EQ(v.pixel_values[0], (float(u0) - mean) / std_);
  c.do_normalize = false;  // rescale only: x * rf
  patchify(frames, c, v);
  EXPECT_EQ(v.pixel_values[0], float(u0) * float(c.rescale_factor));
  c.do_rescale = false;
  patchify(frames, c, v);
  EXPECT_EQ(v.pixel_values[0], float(u0));
}

TEST(ProcessImage, ResizesToSmartSizeAndHashes) {
  ImageProcessorConfig c = qwen35_image();
  Image img = testing::synth(12, 100, 140, "smooth");
  VisionInput v = process_image(img, c);
  const ResizedSize s = smart_resize(100, 140, 32, 65536, 16777216);
  EXPECT_EQ(v.kind, MediaKind::kImage);
  EXPECT_EQ(v.grid_t, 1);
  EXPECT_EQ(v.grid_h, s.height / 16);
  EXPECT_EQ(v.grid_w, s.width / 16);
  EXPECT_EQ(v.num_tokens(2), s.height / 16 * s.width / 16 / 4);
  Image resized = resize_bicubic_aa(img, s.height, s.width);
  const Image* frames[] = {&resized};
  VisionInput ref;
  patchify(frames, c, ref);
  EXPECT_EQ(v.pixel_values, ref.pixel_values);
  EXPECT_EQ(v.hash, content_hash(v));
  // An image already at its smart size is not resampled.
  Image exact = testing::synth(13, 256, 288, "noise");
  VisionInput e = process_image(exact, c);
  const Image* ef[] = {&exact};
  patchify(ef, c, ref);
  EXPECT_EQ(e.pixel_values, ref.pixel_values);
}

}  // namespace
}  // namespace vtllm::multimodal
