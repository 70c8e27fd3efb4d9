// Bit-exactness against the oracle (tools/oracle/mm_processor.py: PIL 'convert("RGB")',
// torchvision's resize and transformers' Qwen2VL / Qwen3VL processors), whose output lives in
// tests/fixtures/media/: the media files and mm_processor.json. Every comparison is exact
// (SHA-256 of the decoded pixels, resized pixels and float32 pixel_values).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "multimodal/image.h"
#include "multimodal/image_processor.h"
#include "multimodal/resize.h"
#include "multimodal/video_processor.h"
#include "test_util.h"

namespace vtllm::multimodal {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const json* oracle() {
  static const json* j = [] {
    const fs::path p = testing::media_dir() / "mm_processor.json";
    if (!fs::exists(p)) return static_cast<json*>(nullptr);
    return new json(json::parse(read_file(p)));
  }();
  return j;
}

// Skips without the oracle's output or the section of it a test reads.
#define NEED_ORACLE(section)                                                             \
  if (oracle() == nullptr)                                                               \
    GTEST_SKIP() << "tests/fixtures/media/mm_processor.json is not there (tools/oracle/" \
                    "mm_processor.py)";                                                  \
  if (!oracle()->contains(section))                                                      \
  GTEST_SKIP() << "mm_processor.json has no '" section "' section (that step of its run failed)"

ImageProcessorConfig qwen35_image() {
  ImageProcessorConfig c;
  c.min_pixels = 65536;
  c.max_pixels = 16777216;
  c.patch_size = 16;
  c.image_mean = {0.5, 0.5, 0.5};
  c.image_std = {0.5, 0.5, 0.5};
  return c;
}

VideoProcessorConfig qwen35_video() {
  VideoProcessorConfig c;
  c.frame.min_pixels = 4096;
  c.frame.max_pixels = 25165824;
  return c;
}

// Where two HWC byte arrays first differ, and how many bytes differ.
std::string first_diff(const std::vector<uint8_t>& got, const json& want) {
  size_t n = 0, first = SIZE_MAX;
  int worst = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const int d = std::abs(int(got[i]) - want[i].get<int>());
    if (d != 0) {
      ++n;
      first = std::min(first, i);
      worst = std::max(worst, d);
    }
  }
  if (n == 0) return "no byte differs";
  return str_cat(n, " of ", got.size(), " bytes differ (max by ", worst, "), first at pixel ",
                 first / 3, " channel ", first % 3, ": got ", int(got[first]), ", want ",
                 want[first].get<int>());
}

std::string sample_diffs(const Image& img, const json& samples) {
  std::string out;
  for (const auto& s : samples) {
    const int64_t y = s[0], x = s[1];
    for (int c = 0; c < 3; ++c) {
      const int got = img.rgb[size_t((y * img.width + x) * 3 + c)], want = s[2][size_t(c)];
      if (got != want) out += str_cat(" (", y, ",", x, ",", c, "): ", got, " vs ", want, ";");
    }
  }
  return out.empty() ? " samples agree" : out;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void expect_pixel_values(const VisionInput& v, const json& rec, const std::string& what) {
  const json& pv = rec["pixel_values"];
  EXPECT_EQ(v.num_patches(), pv["shape"][0].get<int64_t>()) << what;
  EXPECT_EQ(v.patch_dim, pv["shape"][1].get<int64_t>()) << what;
  std::vector<int64_t> grid = {v.grid_t, v.grid_h, v.grid_w};
  EXPECT_EQ(grid, rec["grid_thw"].get<std::vector<int64_t>>()) << what;
  if (int64_t(v.pixel_values.size()) !=
      pv["shape"][0].get<int64_t>() * pv["shape"][1].get<int64_t>())
    return;
  EXPECT_EQ(testing::sha256_hex(v.pixel_values), pv["sha256"].get<std::string>()) << what;
  for (const auto& s : pv["samples"]) {
    const int64_t r = s[0], c = s[1];
    EXPECT_EQ(bits(v.pixel_values[size_t(r * v.patch_dim + c)]), s[2].get<uint32_t>())
        << what << " pixel_values[" << r << "][" << c << "]";
  }
}

TEST(Oracle, DecodedPixelsResizeAndPixelValuesMatch) {
  NEED_ORACLE("images");
  const ImageProcessorConfig cfg = qwen35_image();
  int checked = 0, oriented_checked = 0;
  for (const auto& rec : (*oracle())["images"]) {
    const std::string file = rec["file"];
    SCOPED_TRACE(file + " (" + rec.value("note", "") + ", PIL mode " + rec.value("pil_mode", "?") +
                 ")");
    if (rec.contains("error")) {
      ADD_FAILURE() << "the oracle failed on this file: " << rec["error"];
      continue;
    }
    const auto bytes = testing::read_bytes(testing::media_dir() / file);
    // The oracle's processor input is PIL's open + convert("RGB"): no EXIF orientation.
    const Image img = decode_image(bytes, {}, DecodeOptions{.exif_transpose = false});
    // transformers' load_image transposes by EXIF first; so does decode_image by default.
    const Image oriented = decode_image(bytes);
    if (rec["load_image_equals_convert"].get<bool>()) {
      EXPECT_EQ(oriented.rgb, img.rgb);
    } else {
      EXPECT_EQ(testing::sha256_hex(oriented.rgb), rec["load_image_sha256"].get<std::string>());
      EXPECT_EQ(oriented.height, rec["load_image_shape"][0].get<int64_t>());
      EXPECT_EQ(oriented.width, rec["load_image_shape"][1].get<int64_t>());
      ++oriented_checked;
    }
    const std::string sha = testing::sha256_hex(img.rgb);
    if (sha != rec["rgb_sha256"].get<std::string>()) {
      ADD_FAILURE() << "decoded pixels differ from PIL: "
                    << (rec.contains("rgb_pixels") ? first_diff(img.rgb, rec["rgb_pixels"])
                                                   : sample_diffs(img, rec["rgb_samples"]));
      continue;  // resize and processor on other pixels would only repeat the failure
    }
    const int64_t h = rec["resized"][0], w = rec["resized"][1];
    EXPECT_EQ(smart_resize(img.height, img.width, 32, cfg.min_pixels, cfg.max_pixels),
              (ResizedSize{h, w}));
    const Image resized = resize_bicubic_aa(img, h, w);
    EXPECT_EQ(testing::sha256_hex(resized.rgb), rec["resized_sha256"].get<std::string>())
        << "resize to " << h << "x" << w;
    expect_pixel_values(process_image(img, cfg), rec, file);
    ++checked;
  }
  EXPECT_GE(checked, 20);
  EXPECT_GE(oriented_checked, 1);  // exif_rot6.jpg
}

TEST(Oracle, ResizeTableIsBitExact) {
  NEED_ORACLE("resize");
  int checked = 0;
  for (const auto& rec : (*oracle())["resize"]) {
    const int64_t ih = rec["in_hw"][0], iw = rec["in_hw"][1], oh = rec["out_hw"][0],
                  ow = rec["out_hw"][1];
    SCOPED_TRACE(str_cat("seed ", rec["seed"].get<int64_t>(), ": ", ih, "x", iw, " -> ", oh, "x",
                         ow, " ", rec["kind"].get<std::string>()));
    const Image src = testing::synth(rec["seed"].get<uint64_t>(), ih, iw, rec["kind"]);
    ASSERT_EQ(testing::sha256_hex(src.rgb), rec["input_sha256"].get<std::string>())
        << "synth() differs from the oracle's";
    if (rec.contains("error")) continue;  // torch refused the shape (recorded by the oracle)
    ++checked;
    const Image out = resize_bicubic_aa(src, oh, ow);
    if (testing::sha256_hex(out.rgb) != rec["sha256"].get<std::string>())
      ADD_FAILURE() << "resize differs from torchvision: "
                    << (rec.contains("pixels") ? first_diff(out.rgb, rec["pixels"])
                                               : sample_diffs(out, rec["samples"]));
  }
  EXPECT_GE(checked, 14);
}

TEST(Oracle, SmartResizeTables) {
  NEED_ORACLE("smart_resize");
  for (const auto& rec : (*oracle())["smart_resize"]) {
    const int64_t h = rec["hw"][0], w = rec["hw"][1];
    if (rec["out"].is_string()) {
      EXPECT_THROW(smart_resize(h, w, 32, 65536, 16777216), MediaError) << h << "x" << w;
    } else {
      EXPECT_EQ(smart_resize(h, w, 32, 65536, 16777216),
                (ResizedSize{rec["out"][0], rec["out"][1]}))
          << h << "x" << w;
    }
  }
  for (const auto& rec : (*oracle())["video_smart_resize"]) {
    const int64_t t = rec["thw"][0], h = rec["thw"][1], w = rec["thw"][2];
    if (rec["out"].is_string()) {
      EXPECT_THROW(smart_resize_video(t, h, w, 2, 32, 4096, 25165824), MediaError)
          << t << "x" << h << "x" << w;
    } else {
      EXPECT_EQ(smart_resize_video(t, h, w, 2, 32, 4096, 25165824),
                (ResizedSize{rec["out"][0], rec["out"][1]}))
          << t << "x" << h << "x" << w;
    }
  }
}

TEST(Oracle, VideoProcessorMatches) {
  NEED_ORACLE("videos");
  const VideoProcessorConfig cfg = qwen35_video();
  for (const auto& rec : (*oracle())["videos"]) {
    const int64_t seed = rec["seed"], total = rec["total"], h = rec["hw"][0], w = rec["hw"][1];
    const double fps = rec["fps"];
    SCOPED_TRACE(
        str_cat("video seed ", seed, ": ", total, " frames at ", fps, " fps, ", h, "x", w));
    if (rec.contains("error")) {
      ADD_FAILURE() << "the oracle failed on this clip: " << rec["error"];
      continue;
    }
    const std::vector<int64_t> idx = sample_frame_indices(total, fps, cfg);
    EXPECT_EQ(idx, rec["indices"].get<std::vector<int64_t>>());
    std::vector<Image> frames;
    for (int64_t i : idx)
      frames.push_back(testing::synth(uint64_t(seed * 1000 + i), h, w, rec["kind"]));
    const VisionInput v = process_video(frames, idx, fps, cfg);
    expect_pixel_values(v, rec, "video");
    const auto ts = rec["timestamps"].get<std::vector<double>>();
    EXPECT_EQ(v.timestamps, ts);
    for (size_t i = 0; i < ts.size() && i < v.timestamps.size(); ++i)
      EXPECT_EQ(timestamp_text(v.timestamps[i]), rec["timestamps_text"][i].get<std::string>());
  }
}

}  // namespace
}  // namespace vtllm::multimodal
