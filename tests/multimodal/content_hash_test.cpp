#include "multimodal/content_hash.h"

#include <gtest/gtest.h>

#include <set>

#include "base/hash.h"

namespace vtllm::multimodal {
namespace {

VisionInput sample(uint64_t seed, size_t rows = 128) {
  VisionInput v;
  v.grid_t = 1;
  v.grid_h = int64_t(rows) / 8;
  v.grid_w = 8;
  v.patch_dim = 24;
  v.pixel_values.resize(rows * 24);
  for (size_t i = 0; i < v.pixel_values.size(); ++i)
    v.pixel_values[i] = float(int64_t(splitmix64(seed + i) >> 40)) / 1e5f - 80.0f;
  return v;
}

TEST(ContentHash, EqualInputsEqualHashes) {
  EXPECT_EQ(content_hash(sample(1)), content_hash(sample(1)));
  EXPECT_NE(content_hash(sample(1)), content_hash(sample(2)));
}

TEST(ContentHash, EveryBitOfPixelsGridAndKindMatters) {
  const VisionInput base = sample(3);
  const auto h0 = content_hash(base);
  std::set<std::array<uint64_t, 2>> seen = {h0};
  // One flipped bit anywhere (first word, middle, the tail that is not a whole 32-byte block).
  for (size_t byte : {size_t{0}, size_t{7}, size_t{1000}, base.pixel_values.size() * 4 - 1}) {
    VisionInput v = base;
    reinterpret_cast<uint8_t*>(v.pixel_values.data())[byte] ^= 0x10;
    EXPECT_TRUE(seen.insert(content_hash(v)).second) << byte;
  }
  VisionInput g = base;
  std::swap(g.grid_h, g.grid_w);
  EXPECT_TRUE(seen.insert(content_hash(g)).second);
  VisionInput k = base;
  k.kind = MediaKind::kVideo;
  EXPECT_TRUE(seen.insert(content_hash(k)).second);
  // Lengths that differ only in trailing zero bytes still differ.
  std::vector<uint8_t> a(40, 0), b(41, 0);
  EXPECT_NE(hash_bytes128(a, 1), hash_bytes128(b, 1));
  EXPECT_NE(hash_bytes128(a, 1), hash_bytes128(a, 2));
}

TEST(ContentHash, NoCollisionsOnManyNearbyInputs) {
  std::set<std::array<uint64_t, 2>> seen;
  std::vector<uint8_t> buf(100, 0);
  for (int i = 0; i < 100; ++i)
    for (int bit = 0; bit < 8; ++bit) {
      buf[size_t(i)] ^= uint8_t(1 << bit);
      EXPECT_TRUE(seen.insert(hash_bytes128(buf, 0)).second);
      buf[size_t(i)] ^= uint8_t(1 << bit);
    }
}

}  // namespace
}  // namespace vtllm::multimodal
