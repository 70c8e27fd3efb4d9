// multimodal/video_decode: metadata and pixels of the clips in tests/fixtures/media/video
// against the ffmpeg CLI's frame hashes (<clip>.framehash, made by make_clips.sh) and the
// transformers oracle (oracle.json from tools/oracle/mm_video.py), limits, and bad input.
#include "multimodal/video_decode.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace vtllm::multimodal {
namespace {

const std::string kDir = std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/media/video/";

std::vector<uint8_t> read_clip(const std::string& name) {
  std::ifstream f(kDir + name, std::ios::binary);
  EXPECT_TRUE(f) << name;
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

#define SKIP_WITHOUT_VIDEO()                                                          \
  do {                                                                                \
    if (!video_decode_available())                                                    \
      GTEST_SKIP() << "video input needs vtllm built with libavformat (VTLLM_VIDEO)"; \
  } while (0)

// The frame hashes of the reference files (test_util.h's SHA-256).
std::string sha256_hex(const Image& img) { return testing::sha256_hex(img.rgb); }

// The per-frame hashes of <clip>.framehash, in presentation order.
std::vector<std::string> cli_hashes(const std::string& clip) {
  std::ifstream f(kDir + clip.substr(0, clip.rfind('.')) + ".framehash");
  EXPECT_TRUE(f) << clip;
  std::vector<std::string> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    out.push_back(line.substr(line.rfind(' ') + 1));
  }
  return out;
}

struct Clip {
  const char* name;
  int64_t width, height, frames;
  double fps;  // the rate the clip was made at (constant-rate clips)
  const char* codec;
};

// What make_clips.sh asked ffmpeg for (testsrc2 rate x duration).
const Clip kClips[] = {
    {"h264_64x48_10fps.mp4", 64, 48, 20, 10, "h264"},
    {"h264_bt709_64x48_10fps.mp4", 64, 48, 15, 10, "h264"},
    {"mpeg4_80x60_15fps.mp4", 80, 60, 24, 15, "mpeg4"},
    {"vp9_96x64_24fps.webm", 96, 64, 24, 24, "vp9"},
    {"vp8_64x48_30fps.webm", 64, 48, 30, 30, "vp8"},
    {"h264_64x48_25fps.mkv", 64, 48, 30, 25, "h264"},
    {"mjpeg_64x48_12fps.mov", 64, 48, 18, 12, "mjpeg"},
    {"vp9_odd_67x51_20fps.webm", 67, 51, 20, 20, "vp9"},
    {"h264_aac_64x48_10fps.mp4", 64, 48, 10, 10, "h264"},
    // The first clip with a display rotation: sizes and pixels as displayed.
    {"h264_rot90_64x48_10fps.mp4", 48, 64, 20, 10, "h264"},
    {"h264_rot180_64x48_10fps.mp4", 64, 48, 20, 10, "h264"},
    {"h264_rot270_64x48_10fps.mp4", 48, 64, 20, 10, "h264"},
};

TEST(VideoDecode, DecoderThreadsDoNotChangeTheFrames) {
  SKIP_WITHOUT_VIDEO();
  for (const char* name : {"h264_64x48_10fps.mp4", "vp9_96x64_24fps.webm"}) {
    SCOPED_TRACE(name);
    std::vector<uint8_t> bytes = read_clip(name);
    std::vector<std::string> want = cli_hashes(name);
    VideoLimits lim;
    lim.decoder_threads = 4;
    const std::vector<int64_t> idx = {0, 1, 2, 9, 10, 17, 18, 19};
    std::vector<Image> got = decode_video_frames(bytes, idx, lim);
    ASSERT_EQ(got.size(), idx.size());
    for (size_t k = 0; k < idx.size(); ++k) EXPECT_EQ(sha256_hex(got[k]), want[idx[k]]);
  }
}

// Runs f, which must throw MediaError whose message contains `needle`.
template <class F>
void expect_media_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no MediaError; expected one containing '" << needle << "'";
  } catch (const MediaError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(SelfCheck, Sha256MatchesFipsVectors) {
  const std::string abc = "abc";
  EXPECT_EQ(testing::sha256_hex(reinterpret_cast<const uint8_t*>(abc.data()), abc.size()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(testing::sha256_hex(reinterpret_cast<const uint8_t*>(two.data()), two.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(VideoDecode, WithoutLibavEveryCallNamesTheBuildOption) {
  if (video_decode_available()) GTEST_SKIP() << "built with libav*";
  const std::string msg = "video input needs vtllm built with libavformat (VTLLM_VIDEO)";
  std::vector<uint8_t> bytes = read_clip("h264_64x48_10fps.mp4");
  expect_media_error([&] { probe_video(bytes); }, msg);
  expect_media_error([&] { decode_video_frames(bytes, std::vector<int64_t>{0}); }, msg);
}

TEST(VideoDecode, ProbeReportsTheFramesAndRateTheClipWasMadeWith) {
  SKIP_WITHOUT_VIDEO();
  for (const Clip& c : kClips) {
    SCOPED_TRACE(c.name);
    VideoInfo info = probe_video(read_clip(c.name));
    EXPECT_EQ(info.width, c.width);
    EXPECT_EQ(info.height, c.height);
    EXPECT_EQ(info.total_frames, c.frames);
    // The span of the packets' timestamps: exact in mp4/mov, to Matroska's 1 ms in mkv/webm
    // (the last packet of the 24 fps clip ends at 0.999 s, so its rate reads 24.024).
    EXPECT_NEAR(info.duration, c.frames / c.fps, 1.001e-3);
    EXPECT_DOUBLE_EQ(info.fps, c.frames / info.duration);
    EXPECT_DOUBLE_EQ(info.stream_fps, c.fps);
    EXPECT_EQ(info.codec, c.codec);
  }
}

TEST(VideoDecode, VariableRateClipCountsEveryPacketAndAveragesOverItsSpan) {
  SKIP_WITHOUT_VIDEO();
  VideoInfo info = probe_video(read_clip("h264_vfr_64x48.mp4"));
  // make_clips.sh keeps source frames n < 10 and every 4th after: 10 + 12 of 60 at 30 fps.
  EXPECT_EQ(info.total_frames, 22);
  EXPECT_NEAR(info.fps, info.total_frames / info.duration, 1e-12);
  // The mp4 muxer's avg_frame_rate (what OpenCV reports for this clip) is another figure.
  EXPECT_DOUBLE_EQ(info.stream_fps, 220.0 / 17);
  EXPECT_GT(std::abs(info.fps - info.stream_fps), 1.0);
  // Source frame 56 is the last one shown: the span is at least 56/30 s.
  EXPECT_GE(info.duration, 56.0 / 30);
  EXPECT_LT(info.duration, 60.0 / 30);
}

TEST(VideoDecode, EveryFrameEqualsTheFfmpegCliConversion) {
  SKIP_WITHOUT_VIDEO();
  std::vector<Clip> clips(std::begin(kClips), std::end(kClips));
  clips.push_back({"h264_vfr_64x48.mp4", 64, 48, 22, 0, "h264"});
  for (const Clip& c : clips) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> want = cli_hashes(c.name);
    ASSERT_EQ(static_cast<int64_t>(want.size()), c.frames);
    std::vector<int64_t> all(c.frames);
    for (int64_t i = 0; i < c.frames; ++i) all[i] = i;
    std::vector<Image> got = decode_video_frames(read_clip(c.name), all);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].width, c.width);
      ASSERT_EQ(got[i].height, c.height);
      ASSERT_EQ(got[i].rgb.size(), static_cast<size_t>(c.width * c.height * 3));
      EXPECT_EQ(sha256_hex(got[i]), want[i]) << "frame " << i;
    }
  }
}

TEST(VideoDecode, ChosenFramesEqualTheSameFramesOfAFullDecode) {
  SKIP_WITHOUT_VIDEO();
  std::vector<uint8_t> bytes = read_clip("h264_64x48_10fps.mp4");
  std::vector<std::string> want = cli_hashes("h264_64x48_10fps.mp4");
  DecodedVideo v = decode_video(bytes, [](const VideoInfo& info) {
    // §14.1's example shape: first, a few inside (one repeated), last.
    return std::vector<int64_t>{0, 5, 5, 11, info.total_frames - 1};
  });
  EXPECT_EQ(v.info.total_frames, 20);
  ASSERT_EQ(v.frames.size(), 5u);
  ASSERT_EQ(v.indices, (std::vector<int64_t>{0, 5, 5, 11, 19}));
  for (size_t k = 0; k < v.frames.size(); ++k)
    EXPECT_EQ(sha256_hex(v.frames[k]), want[v.indices[k]]) << "index " << v.indices[k];
  EXPECT_EQ(v.frames[1].rgb, v.frames[2].rgb);
  EXPECT_NE(v.frames[0].rgb, v.frames[4].rgb);
  EXPECT_TRUE(decode_video_frames(bytes, std::vector<int64_t>{}).empty());
}

TEST(VideoDecode, DecodesTheSameFramesFromManyThreadsAtOnce) {
  SKIP_WITHOUT_VIDEO();
  const std::vector<std::string> names = {"h264_64x48_10fps.mp4", "vp9_96x64_24fps.webm",
                                          "mjpeg_64x48_12fps.mov", "h264_64x48_25fps.mkv"};
  std::vector<std::vector<uint8_t>> clips;
  for (const auto& n : names) clips.push_back(read_clip(n));
  const std::vector<int64_t> idx = {0, 3, 7, 9};
  std::vector<std::vector<Image>> serial;
  for (const auto& c : clips) serial.push_back(decode_video_frames(c, idx));
  std::vector<std::vector<Image>> par(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < par.size(); ++t)
    threads.emplace_back([&, t] { par[t] = decode_video_frames(clips[t % clips.size()], idx); });
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < par.size(); ++t) {
    ASSERT_EQ(par[t].size(), idx.size());
    for (size_t k = 0; k < idx.size(); ++k)
      EXPECT_EQ(par[t][k].rgb, serial[t % clips.size()][k].rgb) << "thread " << t;
  }
}

TEST(VideoDecode, RefusesIndicesOutsideTheVideoOrUnsorted) {
  SKIP_WITHOUT_VIDEO();
  std::vector<uint8_t> bytes = read_clip("vp8_64x48_30fps.webm");
  expect_media_error(
      [&] {
        decode_video_frames(bytes, std::vector<int64_t>{0, 30});
      },
      "frame index 30 is outside the video's 30 frames");
  expect_media_error([&] { decode_video_frames(bytes, std::vector<int64_t>{-1}); },
                     "frame index -1");
  expect_media_error(
      [&] {
        decode_video_frames(bytes, std::vector<int64_t>{4, 2});
      },
      "must be sorted");
}

TEST(VideoDecode, LimitsAreCheckedBeforeDecoding) {
  SKIP_WITHOUT_VIDEO();
  std::vector<uint8_t> bytes = read_clip("h264_64x48_25fps.mkv");
  VideoLimits lim;
  lim.max_pixels = 64 * 48 - 1;
  expect_media_error([&] { probe_video(bytes, lim); },
                     "video stream of 64x48 pixels exceeds the limit of 3071 pixels");
  lim = {};
  lim.max_frames = 29;
  expect_media_error([&] { probe_video(bytes, lim); }, "more than the limit of 29 frames");
  lim = {};
  lim.max_duration_s = 1.0;
  expect_media_error([&] { probe_video(bytes, lim); }, "exceeds the limit of 1 s");
  lim = {};
  lim.max_bytes = static_cast<int64_t>(bytes.size()) - 1;
  expect_media_error([&] { probe_video(bytes, lim); }, "exceeds the limit of");
  lim = {};
  lim.max_output_bytes = 64 * 48 * 3 * 2;
  EXPECT_EQ(decode_video_frames(bytes, std::vector<int64_t>{0, 1}, lim).size(), 2u);
  expect_media_error(
      [&] {
        decode_video_frames(bytes, std::vector<int64_t>{0, 1, 2}, lim);
      },
      "exceed the limit of 18432 decoded bytes");
  // The mp4 header's frame count is refused before the packet scan.
  lim = {};
  lim.max_frames = 19;
  expect_media_error([&] { probe_video(read_clip("h264_64x48_10fps.mp4"), lim); },
                     "video of 20 frames exceeds the limit of 19 frames");
}

TEST(VideoDecode, BadInputIsAMediaErrorNamingTheProblem) {
  SKIP_WITHOUT_VIDEO();
  expect_media_error([] { probe_video({}); }, "empty input");
  std::vector<uint8_t> junk(4096);
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 7919 % 251);
  expect_media_error([&] { probe_video(junk); }, "not a readable video container");
  expect_media_error([] { probe_video(read_clip("audio_only.m4a")); },
                     "no video stream (the input holds audio only)");
  // An mp4 cut before its index (moov follows the media data here).
  std::vector<uint8_t> mp4 = read_clip("h264_64x48_10fps.mp4");
  std::vector<uint8_t> half(mp4.begin(), mp4.begin() + mp4.size() / 2);
  expect_media_error([&] { probe_video(half); }, "");
}

TEST(VideoDecode, TruncatedOrDamagedClipsNeverEscapeAsAnythingButMediaError) {
  SKIP_WITHOUT_VIDEO();
  for (const Clip& c : kClips) {
    SCOPED_TRACE(c.name);
    std::vector<uint8_t> full = read_clip(c.name);
    for (size_t cut = 0; cut < full.size(); cut += full.size() / 7 + 1) {
      for (int damage = 0; damage < 2; ++damage) {
        std::vector<uint8_t> b(full.begin(), full.begin() + cut);
        if (damage)
          for (size_t i = cut / 3; i < b.size(); i += 97) b[i] ^= 0x5a;
        try {
          DecodedVideo v = decode_video(b, [](const VideoInfo& info) {
            return std::vector<int64_t>{0, info.total_frames - 1};
          });
          ASSERT_EQ(v.frames.size(), 2u);
          EXPECT_LE(v.info.total_frames, c.frames);
          for (const Image& img : v.frames)
            EXPECT_EQ(img.rgb.size(), static_cast<size_t>(img.width * img.height * 3));
        } catch (const MediaError&) {
        }
      }
    }
  }
}

// oracle.json: what transformers 5.17's video loader reports and returns for each clip
// (tools/oracle/mm_video.py on the GPU machine). Its default backend, torchcodec, is not
// installed there and torchvision 0.26 has no read_video, so the committed file holds
// load_video(backend="opencv") (OpenCV 5.0 with FFmpeg 8): metadata and sampled indices
// equal, every sampled frame's sha256 equal (no tolerance), rotated clips included.
TEST(VideoDecode, MatchesTheTransformersLoader) {
  SKIP_WITHOUT_VIDEO();
  std::ifstream f(kDir + "oracle.json");
  if (!f) GTEST_SKIP() << "no oracle.json (run tools/oracle/mm_video.py)";
  nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_FALSE(j["clips"].empty());
  // The processor's default path; where its backend could not run on the oracle's machine,
  // the first backend that decoded every clip there.
  std::string fallback;
  if (!j["backends_decoding_every_clip"].empty()) fallback = j["backends_decoding_every_clip"][0];
  for (const auto& [name, clip] : j["clips"].items()) {
    SCOPED_TRACE(name);
    if (name.rfind("audio_only", 0) == 0) {
      EXPECT_TRUE(clip["loader"].contains("error"));
      EXPECT_THROW(probe_video(read_clip(name)), MediaError);
      continue;
    }
    const nlohmann::json* r = &clip["loader"];
    if (r->contains("error")) {
      ASSERT_FALSE(fallback.empty()) << (*r)["error"];
      r = &clip["backends"][fallback];
    }
    const auto& ref = *r;
    std::vector<int64_t> idx = ref["indices"].get<std::vector<int64_t>>();
    DecodedVideo v = decode_video(read_clip(name), [&](const VideoInfo&) { return idx; });
    EXPECT_EQ(v.info.total_frames, ref["total_num_frames"].get<int64_t>());
    // torchcodec's rate is frames over the timestamp span; the others' is avg_frame_rate.
    const bool span_rate = ref["backend"] == "torchcodec";
    EXPECT_NEAR(span_rate ? v.info.fps : v.info.stream_fps, ref["fps"].get<double>(), 1e-9);
    EXPECT_EQ(v.info.width, ref["width"].get<int64_t>());
    EXPECT_EQ(v.info.height, ref["height"].get<int64_t>());
    const auto& frames = ref["frames"];
    ASSERT_EQ(frames.size(), v.frames.size());
    const int tol = j.value("pixel_tolerance", 0);
    for (size_t k = 0; k < v.frames.size(); ++k) {
      const auto& fr = frames[k];
      if (tol == 0) {
        EXPECT_EQ(sha256_hex(v.frames[k]), fr["sha256"].get<std::string>());
      }
      for (const auto& px : fr["pixels"]) {  // [y, x, r, g, b]
        int64_t y = px[0], x = px[1];
        for (int ch = 0; ch < 3; ++ch) {
          int got = v.frames[k].rgb[(y * v.info.width + x) * 3 + ch];
          EXPECT_NEAR(got, px[2 + ch].get<int>(), tol) << "frame " << k << " y " << y << " x " << x;
        }
      }
    }
  }
}

}  // namespace
}  // namespace vtllm::multimodal
