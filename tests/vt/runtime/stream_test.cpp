#include "vt/stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "base/error.h"

namespace vt {
namespace {

TEST(Stream, ParallelForCoversEveryIndexOnce) {
  Stream s(Device::cpu(), 4);
  EXPECT_EQ(s.num_threads(), 4);
  for (int64_t n : {1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    s.parallel_for(n, 3, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(Stream, NestedParallelForRunsSerially) {
  Stream s(Device::cpu(), 3);
  std::atomic<int64_t> sum{0};
  s.parallel_for(10, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      s.parallel_for(10, 1, [&](int64_t b2, int64_t e2) { sum += (e2 - b2) * i; });
  });
  EXPECT_EQ(sum.load(), 10 * 45);
}

TEST(Stream, ExceptionsReachTheCaller) {
  Stream s(Device::cpu(), 4);
  EXPECT_THROW(s.parallel_for(100, 1,
                              [](int64_t b, int64_t) {
                                if (b >= 50) VT_THROW("chunk ", b, " failed");
                              }),
               vtllm::Error);
  // The pool still works afterwards.
  std::atomic<int64_t> n{0};
  s.parallel_for(100, 1, [&](int64_t b, int64_t e) { n += e - b; });
  EXPECT_EQ(n.load(), 100);
}

TEST(Stream, CudaStreamWithoutGpuIsAnError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_THROW(Stream(Device::cuda(0)), vtllm::Error);
}

}  // namespace
}  // namespace vt
