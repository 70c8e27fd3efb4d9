#include "engine/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>

#include "base/error.h"

namespace vtllm::engine {
namespace {

std::vector<int32_t> iota_tokens(int n, int32_t start = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

KvCacheConfig config(int32_t blocks, int bs = 4, bool caching = true, int32_t slots = 0) {
  KvCacheConfig c;
  c.block_size = bs;
  c.num_blocks = blocks;
  c.enable_prefix_caching = caching;
  c.num_state_slots = slots;
  return c;
}

TEST(KvCacheManager, AllocatesCeilOfTokensOverBlockSize) {
  KvCacheManager kv(config(10));
  Request r("a", iota_tokens(9), {});
  ASSERT_TRUE(kv.allocate_slots(r, 9));
  EXPECT_EQ(kv.block_ids("a").size(), 3u);
  r.num_computed_tokens = 9;
  r.append_output(1);
  r.append_output(2);
  r.append_output(3);
  ASSERT_TRUE(kv.allocate_slots(r, 3));  // 12 tokens: still 3 blocks
  EXPECT_EQ(kv.block_ids("a").size(), 3u);
  r.num_computed_tokens = 12;
  r.append_output(4);
  ASSERT_TRUE(kv.allocate_slots(r, 1));
  EXPECT_EQ(kv.block_ids("a").size(), 4u);
  EXPECT_EQ(kv.stats().num_free_blocks, 9 - 4);
}

TEST(KvCacheManager, RefusesWithoutChangingAnything) {
  KvCacheManager kv(config(4));  // 3 usable blocks
  Request a("a", iota_tokens(8), {}), b("b", iota_tokens(8, 500), {});
  ASSERT_TRUE(kv.allocate_slots(a, 8));
  EXPECT_FALSE(kv.allocate_slots(b, 8));
  EXPECT_TRUE(kv.block_ids("b").empty());
  EXPECT_EQ(kv.stats().num_free_blocks, 1);
  EXPECT_TRUE(kv.allocate_slots(b, 4));
  kv.free("a");
  kv.free("b");
  EXPECT_EQ(kv.stats().num_free_blocks, 3);
}

TEST(KvCacheManager, SharedPrefixIsFoundAndLastTokenIsAlwaysRecomputed) {
  KvCacheManager kv(config(20));
  Request a("a", iota_tokens(10), {});
  EXPECT_EQ(kv.get_computed_blocks(a).num_tokens, 0);
  ASSERT_TRUE(kv.allocate_slots(a, 10));
  // Same first 9 tokens, then different: blocks 0 and 1 (8 tokens) are shared.
  auto tb = iota_tokens(12);
  tb[9] = 7;
  Request b("b", tb, {});
  PrefixHit hit = kv.get_computed_blocks(b);
  EXPECT_EQ(hit.num_tokens, 8);
  ASSERT_EQ(hit.blocks.size(), 2u);
  EXPECT_EQ(hit.blocks[0], kv.block_ids("a")[0]);
  EXPECT_EQ(hit.blocks[1], kv.block_ids("a")[1]);
  ASSERT_TRUE(kv.allocate_slots(b, 4, hit));
  EXPECT_EQ(kv.pool().ref_count(hit.blocks[0]), 2);
  // A prompt of exactly 8 equal tokens may only reuse 1 block: its last token is recomputed.
  Request c("c", iota_tokens(8), {});
  EXPECT_EQ(kv.get_computed_blocks(c).num_tokens, 4);
  kv.free("a");
  kv.free("b");
  EXPECT_EQ(kv.stats().num_free_blocks, 19);
  EXPECT_GT(kv.stats().prefix_hits, 0);
}

TEST(KvCacheManager, FreedBlocksStayFindableUntilReused) {
  KvCacheManager kv(config(5));  // 4 usable
  Request a("a", iota_tokens(9), {});
  ASSERT_TRUE(kv.allocate_slots(a, 9));
  kv.free("a");
  Request b("b", iota_tokens(9), {});
  PrefixHit hit = kv.get_computed_blocks(b);
  EXPECT_EQ(hit.num_tokens, 8);
  // The hit blocks are free, so they count against the free pool when taken.
  ASSERT_TRUE(kv.allocate_slots(b, 1, hit));
  EXPECT_EQ(kv.stats().num_free_blocks, 1);
  kv.free("b");
  // Fill the cache with other content: the old prefix gets evicted.
  Request c("c", iota_tokens(16, 900), {});
  ASSERT_TRUE(kv.allocate_slots(c, 16));
  kv.free("c");
  Request d("d", iota_tokens(9), {});
  EXPECT_EQ(kv.get_computed_blocks(d).num_tokens, 0);
}

TEST(KvCacheManager, ExtraKeysSeparateEqualTokens) {
  KvCacheManager kv(config(20));
  Request a("a", iota_tokens(12), {});
  a.extra_keys.push_back({0, 4, hash_bytes("image-A")});
  ASSERT_TRUE(kv.allocate_slots(a, 12));
  Request b("b", iota_tokens(12), {});
  b.extra_keys.push_back({0, 4, hash_bytes("image-B")});
  EXPECT_EQ(kv.get_computed_blocks(b).num_tokens, 0);
  Request c("c", iota_tokens(12), {});
  c.extra_keys.push_back({0, 4, hash_bytes("image-A")});
  EXPECT_EQ(kv.get_computed_blocks(c).num_tokens, 8);
  Request d("d", iota_tokens(12), {});
  d.cache_salt = hash_bytes("other tenant");
  d.extra_keys = c.extra_keys;
  EXPECT_EQ(kv.get_computed_blocks(d).num_tokens, 0);
}

TEST(KvCacheManager, OnlyComputedFullBlocksAreCached) {
  KvCacheManager kv(config(20));
  Request a("a", iota_tokens(16), {});
  ASSERT_TRUE(kv.allocate_slots(a, 6));  // chunk: 6 of 16 tokens scheduled
  Request b("b", iota_tokens(16), {});
  EXPECT_EQ(kv.get_computed_blocks(b).num_tokens, 4);
  a.num_computed_tokens = 6;
  ASSERT_TRUE(kv.allocate_slots(a, 10));
  EXPECT_EQ(kv.get_computed_blocks(b).num_tokens, 12);
}

TEST(KvCacheManager, HybridModelHoldsOneStateSlotPerRequest) {
  KvCacheManager kv(config(20, 4, true, 2));
  EXPECT_TRUE(kv.hybrid());
  EXPECT_FALSE(kv.prefix_caching());  // no GDN snapshots in this version
  Request a("a", iota_tokens(6), {}), b("b", iota_tokens(6), {}), c("c", iota_tokens(6), {});
  ASSERT_TRUE(kv.allocate_slots(a, 6));
  EXPECT_EQ(kv.get_computed_blocks(b).num_tokens, 0);  // would be 4 without GDN layers
  ASSERT_TRUE(kv.allocate_slots(b, 6));
  EXPECT_NE(*kv.state_slot("a"), *kv.state_slot("b"));
  EXPECT_FALSE(kv.allocate_slots(c, 6));  // blocks are there, slots are not
  EXPECT_TRUE(kv.block_ids("c").empty());
  EXPECT_EQ(kv.stats().num_free_blocks, 19 - 4);
  kv.free("a");
  EXPECT_FALSE(kv.state_slot("a").has_value());
  ASSERT_TRUE(kv.allocate_slots(c, 6));
  a.num_computed_tokens = 0;
  kv.free("b");
  kv.free("c");
  EXPECT_EQ(kv.stats().num_free_state_slots, 2);
  EXPECT_EQ(kv.stats().num_free_blocks, 19);
}

TEST(KvCacheManager, PrefixStatsCountAdmissionsNotLookups) {
  KvCacheManager kv(config(6));  // 5 usable blocks
  Request a("a", iota_tokens(9), {});
  ASSERT_TRUE(kv.allocate_slots(a, 9));
  Request b("b", iota_tokens(20), {});
  for (int i = 0; i < 3; ++i) {  // b waits: looked up three times, not admitted
    PrefixHit hit = kv.get_computed_blocks(b);
    EXPECT_FALSE(kv.allocate_slots(b, 20 - hit.num_tokens, hit));
  }
  EXPECT_EQ(kv.stats().prefix_queries, 9);
  EXPECT_EQ(kv.stats().prefix_hits, 0);
  kv.free("a");
  PrefixHit hit = kv.get_computed_blocks(b);
  ASSERT_TRUE(kv.allocate_slots(b, 20 - hit.num_tokens, hit));
  EXPECT_EQ(kv.stats().prefix_queries, 29);
  EXPECT_EQ(kv.stats().prefix_hits, 8);
}

TEST(KvCacheManager, HybridSnapshotsMakeBoundaryHitsWithAStateRestore) {
  KvCacheConfig c = config(40, 4, true, 2);
  c.num_state_snapshots = 3;
  KvCacheManager kv(c);
  EXPECT_TRUE(kv.prefix_caching());
  Request a("a", iota_tokens(11), {});
  EXPECT_EQ(kv.prefill_boundary(a), 8);  // (11 - 1) / 4 * 4
  ASSERT_TRUE(kv.allocate_slots(a, 8));
  EXPECT_FALSE(kv.snapshot_after(a, 7).has_value());
  const auto save = kv.snapshot_after(a, 8);
  ASSERT_TRUE(save.has_value());
  EXPECT_EQ(save->src, *kv.state_slot("a"));
  EXPECT_GE(save->dst, 2);  // snapshot slots follow the 2 running slots
  // Same prompt: its blocks are cached but the snapshot is written only by this step.
  Request b("b", iota_tokens(11), {});
  EXPECT_EQ(kv.get_computed_blocks(b).num_tokens, 0);
  kv.begin_step();
  const PrefixHit hit = kv.get_computed_blocks(b);
  EXPECT_EQ(hit.num_tokens, 8);
  EXPECT_EQ(hit.state_snapshot, save->dst);
  ASSERT_TRUE(kv.allocate_slots(b, 3, hit));
  const auto restore = kv.take_state_copy_before("b");
  ASSERT_TRUE(restore.has_value());
  EXPECT_EQ(*restore, (StateCopy{save->dst, *kv.state_slot("b")}));
  EXPECT_FALSE(kv.take_state_copy_before("b").has_value());  // once
  // A longer prompt sharing 3 blocks hits only up to the 2-block snapshot.
  auto longer = iota_tokens(20);
  Request d("d", longer, {});
  a.num_computed_tokens = 8;
  ASSERT_TRUE(kv.allocate_slots(a, 3));  // a's block 2 (tokens 8..11) is now cached too
  EXPECT_EQ(kv.get_computed_blocks(d).num_tokens, 8);
  kv.free("a");
  kv.free("b");
  EXPECT_EQ(kv.stats().num_free_state_slots, 2);
  EXPECT_EQ(kv.stats().num_state_snapshots, 1);
  EXPECT_TRUE(kv.reset_prefix_cache());
  EXPECT_EQ(kv.stats().num_state_snapshots, 0);
}

TEST(KvCacheManager, RejectsMoreTokensThanTheRequestHas) {
  KvCacheManager kv(config(20));
  Request a("a", iota_tokens(5), {});
  EXPECT_THROW(kv.allocate_slots(a, 6), Error);
}

}  // namespace
}  // namespace vtllm::engine
