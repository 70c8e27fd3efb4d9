// base/hash.h against published reference values: splitmix64 as Vigna's
// splitmix64.c generates it, FNV-1a 64 as the FNV specification lists it.
#include "base/hash.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace vtllm {
namespace {

TEST(SplitMix64, MatchesTheReferenceSequence) {
  // splitmix64.c seeded with 1234567: next() adds gamma to the state, then mixes.
  const uint64_t expected[] = {6457827717110365317ULL, 3203168211198807973ULL,
                               9817491932198370423ULL};
  uint64_t state = 1234567;
  for (uint64_t e : expected) {
    EXPECT_EQ(splitmix64(state), e);
    state += kSplitMix64Gamma;
  }
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
}

TEST(SplitMix64, IsTheFinalizerOfTheIncrementedState) {
  uint64_t x = 0x0123456789abcdefULL;
  for (int i = 0; i < 1000; ++i, x = x * 6364136223846793005ULL + 1442695040888963407ULL)
    EXPECT_EQ(splitmix64(x), mix64(x + kSplitMix64Gamma));
  static_assert(mix64(0) == 0, "the finalizer fixes zero");
}

TEST(Fnv1a64, MatchesTheSpecificationVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

}  // namespace
}  // namespace vtllm
