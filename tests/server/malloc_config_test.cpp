#include "server/malloc_config.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "base/error.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace vtllm::server {
namespace {

#if defined(__GLIBC__)

// Through volatile pointers so that the compiler cannot pair and drop the calls.
void* (*volatile sys_malloc)(size_t) = std::malloc;
void (*volatile sys_free)(void*) = std::free;

// In a fresh process (the death test re-executes the binary): frees a mmapped
// 8 MiB block, which lifts glibc's dynamic threshold to 8 MiB, then asks for
// 1 MiB and exits 0 when that block was mmapped (mallinfo2's mmapped bytes grew
// by it), 1 when it came from an arena.
[[noreturn]] void exit_whether_mmapped(const MallocConfig* config) {
  if (config) apply_malloc_config(*config);
  sys_free(sys_malloc(8u << 20));
  const size_t before = mallinfo2().hblkhd;
  void* block = sys_malloc(1u << 20);
  const size_t after = mallinfo2().hblkhd;
  sys_free(block);
  std::_Exit(after >= before + (1u << 20) ? 0 : 1);
}

TEST(MallocConfig, DynamicThresholdSendsAMiBToTheArenaAfterALargerFree) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_whether_mmapped(nullptr), testing::ExitedWithCode(1), "");
  const MallocConfig untouched{.mmap_threshold = 0};
  EXPECT_EXIT(exit_whether_mmapped(&untouched), testing::ExitedWithCode(1), "");
}

TEST(MallocConfig, FixedThresholdKeepsMappingLargeBlocks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const MallocConfig fixed;  // 128 KiB
  EXPECT_EXIT(exit_whether_mmapped(&fixed), testing::ExitedWithCode(0), "");
  const MallocConfig above{.mmap_threshold = 2u << 20};  // the 1 MiB block stays below
  EXPECT_EXIT(exit_whether_mmapped(&above), testing::ExitedWithCode(1), "");
}

TEST(MallocConfig, RefusesAThresholdGlibcCannotHold) {
  EXPECT_THROW(apply_malloc_config({.mmap_threshold = (32u << 20) + 1}), Error);
}

#endif

}  // namespace
}  // namespace vtllm::server
