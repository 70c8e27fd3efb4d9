// process_media: the decoder and the processor of each kind, the frames the §14.1
// sampler picks at the container's rate, and errors that name the problem.
#include "multimodal/media_processor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file.h"
#include "multimodal/image_processor.h"
#include "multimodal/video_processor.h"

namespace vtllm::multimodal {
namespace {

std::vector<uint8_t> fixture(const std::string& name) {
  const std::string s = read_file(std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/media/" + name);
  return {s.begin(), s.end()};
}

TEST(MediaProcessor, AnImageIsDecodedThenProcessed) {
  const ProcessorConfig pc;
  const std::vector<uint8_t> png = fixture("gray.png");
  const VisionInput got = process_media(MediaKind::kImage, png, pc);
  const VisionInput want = process_image(decode_image(png), pc.image);
  EXPECT_EQ(got.kind, MediaKind::kImage);
  EXPECT_EQ(got.hash, want.hash);
  EXPECT_EQ(got.pixel_values, want.pixel_values);
  EXPECT_NE(got.hash, process_media(MediaKind::kImage, fixture("gray.jpg"), pc).hash);
}

TEST(MediaProcessor, AVideoKeepsTheSampledFramesOnly) {
  if (!video_decode_available()) GTEST_SKIP() << "built without libav* (VTLLM_VIDEO)";
  const ProcessorConfig pc;
  const std::vector<uint8_t> clip = fixture("video/h264_64x48_25fps.mkv");
  const VideoInfo info = probe_video(clip);
  const std::vector<int64_t> idx = sample_frame_indices(info.total_frames, info.fps, pc.video);
  const VisionInput got = process_media(MediaKind::kVideo, clip, pc);
  const VisionInput want = process_video(decode_video_frames(clip, idx), idx, info.fps, pc.video);
  EXPECT_EQ(got.kind, MediaKind::kVideo);
  EXPECT_EQ(got.grid_t, int64_t(idx.size() + 1) / 2);
  EXPECT_EQ(got.timestamps, want.timestamps);
  EXPECT_EQ(got.hash, want.hash);
}

TEST(MediaProcessor, BadBytesAreMediaErrorsNamingTheFormat) {
  const ProcessorConfig pc;
  std::vector<uint8_t> png = fixture("gray.png");
  png.resize(png.size() / 2);
  try {
    process_media(MediaKind::kImage, png, pc);
    ADD_FAILURE() << "a truncated PNG was accepted";
  } catch (const MediaError& e) {
    EXPECT_NE(std::string(e.what()).find("PNG"), std::string::npos) << e.what();
  }
  const std::vector<uint8_t> junk(300, 7);
  EXPECT_THROW(process_media(MediaKind::kVideo, junk, pc), MediaError);
}

}  // namespace
}  // namespace vtllm::multimodal
