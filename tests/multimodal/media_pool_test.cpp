#include "multimodal/media_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "base/error.h"

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

}  // namespace
}  // namespace vtllm::multimodal
