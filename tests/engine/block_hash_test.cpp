#include "engine/block_hash.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <unordered_set>

namespace vtllm::engine {
namespace {

std::vector<int32_t> random_tokens(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int32_t> d(0, 150000);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = d(rng);
  return t;
}

TEST(BlockHash, ChainCoversOnlyFullBlocks) {
  std::mt19937 rng(1);
  auto tokens = random_tokens(rng, 37);
  std::vector<BlockHash> h;
  extend_block_hashes(tokens, 16, {}, std::nullopt, h);
  EXPECT_EQ(h.size(), 2u);
  // Recomputed by hand: block i hashes its parent, its tokens, no keys.
  const std::span<const int32_t> all(tokens);
  EXPECT_EQ(h[0], hash_block(kRootBlockHash, all.subspan(0, 16), {}));
  EXPECT_EQ(h[1], hash_block(h[0], all.subspan(16, 16), {}));
}

TEST(BlockHash, ExtendingIsIncremental) {
  std::mt19937 rng(2);
  auto tokens = random_tokens(rng, 64);
  std::vector<BlockHash> whole, parts;
  extend_block_hashes(tokens, 8, {}, std::nullopt, whole);
  for (size_t n = 1; n <= tokens.size(); n += 5)
    extend_block_hashes(std::span<const int32_t>(tokens).first(n), 8, {}, std::nullopt, parts);
  extend_block_hashes(tokens, 8, {}, std::nullopt, parts);
  EXPECT_EQ(whole, parts);
}

TEST(BlockHash, SameBlockUnderDifferentPrefixHashesDifferently) {
  std::mt19937 rng(3);
  auto a = random_tokens(rng, 32);
  auto b = a;
  b[3] ^= 1;  // first block differs, second block equal
  std::vector<BlockHash> ha, hb;
  extend_block_hashes(a, 16, {}, std::nullopt, ha);
  extend_block_hashes(b, 16, {}, std::nullopt, hb);
  EXPECT_NE(ha[0], hb[0]);
  EXPECT_NE(ha[1], hb[1]);
}

TEST(BlockHash, ExtraKeysAndSaltTouchOnlyTheirBlocks) {
  std::mt19937 rng(4);
  auto t = random_tokens(rng, 48);
  std::vector<BlockHash> plain, image, salted;
  extend_block_hashes(t, 16, {}, std::nullopt, plain);
  const ExtraKeySpan span{20, 8, hash_bytes("image-1")};  // inside block 1 only
  extend_block_hashes(t, 16, std::span(&span, 1), std::nullopt, image);
  EXPECT_EQ(plain[0], image[0]);
  EXPECT_NE(plain[1], image[1]);
  EXPECT_NE(plain[2], image[2]);  // chained
  extend_block_hashes(t, 16, {}, hash_bytes("tenant-a"), salted);
  EXPECT_NE(plain[0], salted[0]);
  EXPECT_EQ(extra_keys_for_block(16, 32, std::span(&span, 1), std::nullopt).size(), 1u);
  EXPECT_TRUE(extra_keys_for_block(28, 44, std::span(&span, 1), std::nullopt).empty());
  EXPECT_EQ(extra_keys_for_block(0, 16, {}, hash_bytes("x")).size(), 1u);
}

TEST(BlockHash, NoCollisionsOverManyNearIdenticalBlocks) {
  // Every single-token change of one block, at every position: all distinct in both halves.
  std::mt19937 rng(5);
  auto base = random_tokens(rng, 16);
  std::unordered_set<BlockHash, BlockHashHasher> seen;
  std::unordered_set<uint64_t> his, los;
  std::set<std::vector<int32_t>> distinct;
  for (int pos = 0; pos < 16; ++pos)
    for (int32_t v = 0; v < 2000; ++v) {
      auto t = base;
      t[pos] = v;
      distinct.insert(t);
      const BlockHash h = hash_block(kRootBlockHash, t, {});
      seen.insert(h);
      his.insert(h.hi);
      los.insert(h.lo);
    }
  const size_t expected = distinct.size();
  ASSERT_GT(expected, 31900u);
  EXPECT_EQ(seen.size(), expected);
  EXPECT_EQ(his.size(), expected);
  EXPECT_EQ(los.size(), expected);
}

TEST(BlockHash, BitsAreBalanced) {
  // Flipping one input bit flips about half of the 128 output bits.
  std::mt19937 rng(6);
  double total = 0;
  int n = 0;
  for (int trial = 0; trial < 200; ++trial) {
    auto t = random_tokens(rng, 16);
    const BlockHash a = hash_block(kRootBlockHash, t, {});
    t[trial % 16] ^= 1 << (trial % 17);
    const BlockHash b = hash_block(kRootBlockHash, t, {});
    total += __builtin_popcountll(a.hi ^ b.hi) + __builtin_popcountll(a.lo ^ b.lo);
    ++n;
  }
  EXPECT_NEAR(total / n, 64.0, 3.0);
}

TEST(BlockHash, BytesHashDependsOnLengthAndContent) {
  EXPECT_NE(hash_bytes("abc"), hash_bytes("abd"));
  EXPECT_NE(hash_bytes(std::string_view("a\0", 2)), hash_bytes("a"));
  EXPECT_EQ(hash_bytes("salt"), hash_bytes(std::string("salt")));
}

}  // namespace
}  // namespace vtllm::engine
