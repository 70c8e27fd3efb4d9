#include "multimodal/media_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <vector>

#include "base/error.h"
#include "multimodal/image_processor.h"
#include "multimodal/video_processor.h"
#include "test_util.h"

namespace vtllm::multimodal {
namespace {

TEST(MediaPool, RunsJobsInParallelAndReturnsTheirResults) {
  MediaPool pool(4);
  std::atomic<int> running{0}, peak{0};
  std::vector<std::future<std::shared_ptr<const VisionInput>>> futs;
  for (int i = 0; i < 32; ++i)
    futs.push_back(pool.submit([&, i] {
      const int now = ++running;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      --running;
      VisionInput v;
      v.grid_h = 2 * (i + 1);
      return v;
    }));
  for (int i = 0; i < 32; ++i) EXPECT_EQ(futs[size_t(i)].get()->grid_h, 2 * (i + 1));
  EXPECT_GT(peak.load(), 1);  // more than one thread worked at once
  EXPECT_LE(peak.load(), 4);
}

TEST(MediaPool, AJobsErrorReachesItsFutureAndThePoolStaysUp) {
  MediaPool pool(2);
  auto bad = pool.submit([]() -> VisionInput { VT_THROW("image: truncated PNG"); });
  try {
    bad.get();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated PNG"), std::string::npos);
  }
  auto good = pool.submit([] { return VisionInput{}; });
  EXPECT_NE(good.get(), nullptr);
  EXPECT_THROW(MediaPool(0), Error);
  EXPECT_GE(MediaPool::default_size(), 1);
  EXPECT_LE(MediaPool::default_size(), 8);
}

// The pool's loop: every index exactly once, on more than one thread, from the caller's
// thread or from inside the pool's own jobs (while every other worker is busy too).
TEST(MediaPool, ParallelForRunsEachIndexOnceAlsoFromItsOwnJobs) {
  MediaPool pool(4);
  const ParallelFor loop = pool.parallel_for();
  std::vector<std::atomic<int>> hits(5000);
  std::atomic<int> running{0}, peak{0};
  loop(int64_t(hits.size()), [&](int64_t i) {
    const int now = ++running;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    if (i % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ++hits[size_t(i)];
    --running;
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_GT(peak.load(), 1);
  std::vector<std::future<std::shared_ptr<const VisionInput>>> jobs;
  std::atomic<int64_t> sum{0};
  for (int j = 0; j < 8; ++j)
    jobs.push_back(pool.submit([&] {
      loop(100, [&](int64_t i) { sum += i; });
      return VisionInput{};
    }));
  for (auto& f : jobs) f.get();
  EXPECT_EQ(sum.load(), 8 * 4950);
  parallel_for(ParallelFor{}, 3, [&](int64_t i) { sum += i; });  // the serial loop
  EXPECT_EQ(sum.load(), 8 * 4950 + 3);
}

TEST(MediaPool, ParallelForRethrowsAnIndexsErrorAndThePoolStaysUp) {
  MediaPool pool(3);
  const ParallelFor loop = pool.parallel_for();
  try {
    loop(64, [](int64_t i) {
      if (i == 17) VT_THROW("index 17 failed");
    });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 17"), std::string::npos);
  }
  std::atomic<int> n{0};
  loop(10, [&](int64_t) { ++n; });
  EXPECT_EQ(n.load(), 10);
}

// Split over the pool, the processors give what they give on one thread, to the bit.
TEST(MediaPool, ProcessorsOnThePoolEqualTheSerialOnes) {
  MediaPool pool(3);
  const ParallelFor loop = pool.parallel_for();
  ImageProcessorConfig cfg;
  cfg.patch_size = 16;
  cfg.min_pixels = 65536;
  const Image img = testing::synth(7, 301, 517, "smooth");  // resized to 288 x 512
  const VisionInput a = process_image(img, cfg), b = process_image(img, cfg, loop);
  EXPECT_EQ(a.grid_h, b.grid_h);
  EXPECT_EQ(a.pixel_values, b.pixel_values);
  EXPECT_EQ(a.hash, b.hash);
  std::vector<Image> frames;
  std::vector<int64_t> idx;
  for (int i = 0; i < 5; ++i) {
    frames.push_back(testing::synth(20 + uint64_t(i), 120, 200, "smooth"));
    idx.push_back(i * 6);
  }
  VideoProcessorConfig vc;
  const VisionInput va = process_video(frames, idx, 30.0, vc),
                    vb = process_video(frames, idx, 30.0, vc, loop);
  EXPECT_EQ(va.grid_t, vb.grid_t);
  EXPECT_EQ(va.pixel_values, vb.pixel_values);
  EXPECT_EQ(va.hash, vb.hash);
  EXPECT_EQ(va.timestamps, vb.timestamps);
}

}  // namespace
}  // namespace vtllm::multimodal
