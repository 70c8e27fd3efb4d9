#include "multimodal/processor_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace vtllm::multimodal {
namespace {

// Qwen3.5's preprocessor_config.json (qwen3_5.md §13).
constexpr const char* kQwen35Image = R"({
  "size": {"longest_edge": 16777216, "shortest_edge": 65536},
  "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
  "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
  "processor_class": "Qwen3VLProcessor", "image_processor_type": "Qwen2VLImageProcessorFast"})";
constexpr const char* kQwen35Video = R"({
  "size": {"longest_edge": 25165824, "shortest_edge": 4096},
  "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
  "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
  "processor_class": "Qwen3VLProcessor", "video_processor_type": "Qwen3VLVideoProcessor"})";

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ProcessorConfig, ClassDefaults) {
  ImageProcessorConfig i;
  EXPECT_EQ(i.min_pixels, 3136);
  EXPECT_EQ(i.max_pixels, 1003520);
  EXPECT_EQ(i.patch_size, 14);
  EXPECT_EQ(i.factor(), 28);
  VideoProcessorConfig v;
  EXPECT_EQ(v.frame.min_pixels, 131072);
  EXPECT_EQ(v.frame.max_pixels, 786432);
  EXPECT_EQ(v.frame.patch_size, 16);
  EXPECT_EQ(v.fps, 2.0);
  EXPECT_EQ(v.min_frames, 4);
  EXPECT_EQ(v.max_frames, 768);
  EXPECT_TRUE(v.do_sample_frames);
}

TEST(ProcessorConfig, ParsesQwen35Files) {
  ImageProcessorConfig i;
  apply_image_processor_json(i, kQwen35Image, "preprocessor_config.json");
  EXPECT_EQ(i.min_pixels, 65536);
  EXPECT_EQ(i.max_pixels, 16777216);
  EXPECT_EQ(i.factor(), 32);
  EXPECT_EQ(i.image_mean[1], 0.5);
  VideoProcessorConfig v;
  apply_video_processor_json(v, kQwen35Video, "video_preprocessor_config.json");
  EXPECT_EQ(v.frame.min_pixels, 4096);
  EXPECT_EQ(v.frame.max_pixels, 25165824);
  EXPECT_EQ(v.fps, 2.0);
}

TEST(ProcessorConfig, MinMaxPixelsOverrideSizeAndErrorsNameTheKey) {
  ImageProcessorConfig i;
  apply_image_processor_json(
      i, R"({"size": {"shortest_edge": 10, "longest_edge": 20000}, "min_pixels": 100})", "p");
  EXPECT_EQ(i.min_pixels, 100);
  EXPECT_EQ(i.max_pixels, 20000);
  EXPECT_NE(error_of([&] {
              apply_image_processor_json(i, R"({"size": {"shortest_edge": 10}})", "p.json");
            }).find("p.json: size"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_image_processor_json(i, R"({"patch_size": "16"})", "p.json");
            }).find("patch_size"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_image_processor_json(i, R"({"resample": 2})", "p.json");
            }).find("resample"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_image_processor_json(i, R"({"image_std": [0.5, 0, 0.5]})", "p.json");
            }).find("image_std"),
            std::string::npos);
}

TEST(ProcessorConfig, LoadsFolderWithPrecedence) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("vt_mm_cfg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir / name) << text;
  };
  // processor_config.json alone (transformers 5 layout).
  write("processor_config.json", std::string(R"({"image_processor": )") + kQwen35Image +
                                     R"(, "video_processor": )" + kQwen35Video + "}");
  ProcessorConfig c = load_processor_config(dir.string());
  EXPECT_EQ(c.image.min_pixels, 65536);
  EXPECT_EQ(c.video.frame.max_pixels, 25165824);
  // The standalone files win over the nested objects.
  write("preprocessor_config.json", R"({"size": {"shortest_edge": 1000, "longest_edge": 2000}})");
  c = load_processor_config(dir.string());
  EXPECT_EQ(c.image.min_pixels, 1000);
  EXPECT_EQ(c.image.patch_size, 14);  // the nested object no longer applies: class default
  EXPECT_EQ(c.video.frame.max_pixels, 25165824);
  fs::remove(dir / "processor_config.json");
  // No video file: the video processor reads preprocessor_config.json.
  c = load_processor_config(dir.string());
  EXPECT_EQ(c.video.frame.min_pixels, 1000);
  EXPECT_EQ(c.video.frame.patch_size, 16);  // the video class default
  fs::remove_all(dir);
  // An empty folder: class defaults.
  c = load_processor_config(fs::temp_directory_path().string());
  EXPECT_EQ(c.image.patch_size, 14);
}

TEST(MmProcessorKwargs, RouteOverrideAndRefuseUnknownKeys) {
  ProcessorConfig c;
  apply_image_processor_json(c.image, kQwen35Image, "p");
  apply_video_processor_json(c.video, kQwen35Video, "v");
  apply_mm_processor_kwargs(c, R"({"max_pixels": 1000000, "fps": 1, "max_frames": 64})");
  EXPECT_EQ(c.image.max_pixels, 1000000);
  EXPECT_EQ(c.video.frame.max_pixels, 25165824);  // min/max_pixels are image kwargs
  EXPECT_EQ(c.video.fps, 1.0);
  EXPECT_EQ(c.video.max_frames, 64);
  apply_mm_processor_kwargs(c, R"({"size": {"shortest_edge": 2048, "longest_edge": 4194304}})");
  EXPECT_EQ(c.image.min_pixels, 2048);
  EXPECT_EQ(c.video.frame.min_pixels, 2048);  // size goes to both
  apply_mm_processor_kwargs(c, R"({"videos_kwargs": {"num_frames": 8}})");
  EXPECT_EQ(c.video.num_frames, 8);
  apply_mm_processor_kwargs(c, R"({"fps": 4})");
  EXPECT_FALSE(c.video.num_frames.has_value());

  const ProcessorConfig before = c;
  std::string err =
      error_of([&] { apply_mm_processor_kwargs(c, R"({"max_pixels": 5, "bogus": 1, "fpz": 2})"); });
  EXPECT_NE(err.find("unknown keys 'bogus', 'fpz'"), std::string::npos) << err;
  EXPECT_EQ(c.image.max_pixels, before.image.max_pixels);  // nothing applied
  err = error_of([&] { apply_mm_processor_kwargs(c, R"({"fps": 2, "num_frames": 4})"); });
  EXPECT_NE(err.find("mutually exclusive"), std::string::npos) << err;
  err = error_of([&] { apply_mm_processor_kwargs(c, R"({"images_kwargs": {"fps": 2}})"); });
  EXPECT_NE(err.find("images_kwargs: unknown key 'fps'"), std::string::npos) << err;
  err = error_of([&] { apply_mm_processor_kwargs(c, "[1]"); });
  EXPECT_NE(err.find("expected a JSON object"), std::string::npos) << err;
  err = error_of(
      [&] { apply_mm_processor_kwargs(c, R"({"min_pixels": 100000000, "max_pixels": 1000})"); });
  EXPECT_NE(err.find("exceed max pixels"), std::string::npos) << err;
}

}  // namespace
}  // namespace vtllm::multimodal
