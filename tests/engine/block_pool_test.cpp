#include "engine/block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "base/error.h"

namespace vtllm::engine {
namespace {

std::vector<int32_t> tokens_of(int32_t seed, int n) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = seed * 1000 + i;
  return t;
}

TEST(BlockPool, NullBlockIsNeverHandedOut) {
  BlockPool pool(5, 4, true);
  EXPECT_EQ(pool.num_free(), 4);
  auto got = pool.allocate(4);
  EXPECT_EQ(std::set<int32_t>(got.begin(), got.end()), (std::set<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(pool.num_free(), 0);
  EXPECT_THROW(pool.allocate(1), Error);
  EXPECT_DOUBLE_EQ(pool.usage(), 1.0);
}

TEST(BlockPool, FreeQueueIsLeastRecentlyFreedFirst) {
  BlockPool pool(6, 4, false);
  auto a = pool.allocate(5);  // 1..5 in order
  EXPECT_EQ(a, (std::vector<int32_t>{1, 2, 3, 4, 5}));
  pool.free(std::vector<int32_t>{4, 2});
  pool.free(std::vector<int32_t>{5});
  EXPECT_EQ(pool.allocate(3), (std::vector<int32_t>{4, 2, 5}));
}

TEST(BlockPool, RefCountsHoldBlocksUntilLastFree) {
  BlockPool pool(4, 4, true);
  auto a = pool.allocate(1);
  pool.touch(a);
  EXPECT_EQ(pool.ref_count(a[0]), 2);
  pool.free(a);
  EXPECT_EQ(pool.num_free(), 2);
  pool.free(a);
  EXPECT_EQ(pool.num_free(), 3);
  EXPECT_THROW(pool.free(a), Error);  // no reference left
  EXPECT_THROW(pool.free(std::vector<int32_t>{0}), Error);
}

TEST(BlockPool, TouchTakesAFreeCachedBlockOutOfTheMiddleOfTheQueue) {
  BlockPool pool(5, 2, true);
  auto a = pool.allocate(4);
  const auto t = tokens_of(1, 2);
  const BlockHash h = hash_block(kRootBlockHash, t, {});
  pool.cache(a[2], h, kRootBlockHash, t, {});
  pool.free(a);  // queue: a0 a1 a2 a3
  auto hit = pool.lookup(h, kRootBlockHash, t, {});
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(*hit, a[2]);
  pool.touch(std::vector<int32_t>{*hit});
  EXPECT_EQ(pool.num_free(), 3);
  EXPECT_EQ(pool.allocate(3), (std::vector<int32_t>{a[0], a[1], a[3]}));
  EXPECT_TRUE(pool.lookup(h, kRootBlockHash, t, {}).has_value());  // still cached while held
}

TEST(BlockPool, AllocatingAFreeCachedBlockEvictsIt) {
  BlockPool pool(3, 2, true);
  auto a = pool.allocate(2);
  const auto t = tokens_of(2, 2);
  const BlockHash h = hash_block(kRootBlockHash, t, {});
  pool.cache(a[0], h, kRootBlockHash, t, {});
  EXPECT_EQ(pool.num_cached(), 1);
  pool.free(a);
  EXPECT_TRUE(pool.lookup(h, kRootBlockHash, t, {}).has_value());
  pool.allocate(1);  // takes a[0], the least recently freed
  EXPECT_FALSE(pool.lookup(h, kRootBlockHash, t, {}).has_value());
  EXPECT_EQ(pool.num_cached(), 0);
  EXPECT_FALSE(pool.hash_of(a[0]).has_value());
}

TEST(BlockPool, HashCollisionIsAMissNotAnAlias) {
  BlockPool pool(3, 2, true);
  auto a = pool.allocate(1);
  const auto t = tokens_of(3, 2);
  const BlockHash h = hash_block(kRootBlockHash, t, {});
  pool.cache(a[0], h, kRootBlockHash, t, {});
  // Same hash, other content: as if two different blocks collided.
  const auto other = tokens_of(4, 2);
  EXPECT_FALSE(pool.lookup(h, kRootBlockHash, other, {}).has_value());
  const BlockHash other_parent{1, 2};
  EXPECT_FALSE(pool.lookup(h, other_parent, t, {}).has_value());
  const BlockHash key = hash_bytes("img");
  EXPECT_FALSE(pool.lookup(h, kRootBlockHash, t, std::span(&key, 1)).has_value());
  EXPECT_TRUE(pool.lookup(h, kRootBlockHash, t, {}).has_value());
}

TEST(BlockPool, CachingDisabledFindsNothing) {
  BlockPool pool(3, 2, false);
  auto a = pool.allocate(1);
  const auto t = tokens_of(5, 2);
  const BlockHash h = hash_block(kRootBlockHash, t, {});
  pool.cache(a[0], h, kRootBlockHash, t, {});
  EXPECT_FALSE(pool.lookup(h, kRootBlockHash, t, {}).has_value());
}

TEST(BlockPool, RejectsPartialBlocksAndUnheldBlocks) {
  BlockPool pool(3, 4, true);
  auto a = pool.allocate(1);
  const auto t = tokens_of(6, 3);
  EXPECT_THROW(pool.cache(a[0], hash_block(kRootBlockHash, t, {}), kRootBlockHash, t, {}), Error);
  const auto full = tokens_of(6, 4);
  EXPECT_THROW(pool.cache(2, hash_block(kRootBlockHash, full, {}), kRootBlockHash, full, {}),
               Error);
}

TEST(BlockPool, ResetPrefixCacheOnlyWhenIdle) {
  BlockPool pool(3, 2, true);
  auto a = pool.allocate(1);
  const auto t = tokens_of(7, 2);
  const BlockHash h = hash_block(kRootBlockHash, t, {});
  pool.cache(a[0], h, kRootBlockHash, t, {});
  EXPECT_FALSE(pool.reset_prefix_cache());
  pool.free(a);
  EXPECT_TRUE(pool.reset_prefix_cache());
  EXPECT_FALSE(pool.lookup(h, kRootBlockHash, t, {}).has_value());
}

TEST(BlockPool, RandomOperationsKeepCountsConsistent) {
  // Against a model: a plain map of reference counts.
  std::mt19937 rng(11);
  const int32_t n = 40;
  BlockPool pool(n, 1, false);
  std::vector<int> refs(n, 0);
  std::vector<int32_t> held;  // one entry per reference
  for (int step = 0; step < 5000; ++step) {
    const int op = rng() % 3;
    if (op == 0) {
      const int32_t k = rng() % 4;
      if (k > pool.num_free()) continue;
      for (int32_t b : pool.allocate(k)) {
        EXPECT_EQ(refs[b], 0);
        refs[b] = 1;
        held.push_back(b);
      }
    } else if (op == 1 && !held.empty()) {
      const int32_t b = held[rng() % held.size()];
      pool.touch(std::vector<int32_t>{b});
      ++refs[b];
      held.push_back(b);
    } else if (!held.empty()) {
      const size_t i = rng() % held.size();
      const int32_t b = held[i];
      held.erase(held.begin() + i);
      pool.free(std::vector<int32_t>{b});
      --refs[b];
    }
    const int32_t free_model = std::count(refs.begin() + 1, refs.end(), 0);
    ASSERT_EQ(pool.num_free(), free_model) << "step " << step;
  }
  for (int32_t b = 1; b < n; ++b) EXPECT_EQ(pool.ref_count(b), refs[b]);
}

}  // namespace
}  // namespace vtllm::engine
