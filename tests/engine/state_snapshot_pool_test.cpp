#include "engine/state_snapshot_pool.h"

#include <gtest/gtest.h>

#include <set>

#include "base/error.h"

namespace vtllm::engine {
namespace {

BlockHash h(uint64_t i) { return hash_bytes(std::to_string(i)); }

TEST(StateSnapshotPool, ASnapshotIsFoundOnlyAfterItsStepRan) {
  StateSnapshotPool pool(8, 2);
  const auto slot = pool.reserve(h(1));
  ASSERT_TRUE(slot.has_value());
  EXPECT_EQ(*slot, 8);  // ids follow the running slots
  EXPECT_FALSE(pool.lookup(h(1)).has_value());  // being written this step
  EXPECT_FALSE(pool.reserve(h(1)).has_value());
  pool.begin_step();
  EXPECT_EQ(pool.lookup(h(1)), slot);
  EXPECT_FALSE(pool.lookup(h(2)).has_value());
}

TEST(StateSnapshotPool, EvictsLeastRecentlyUsedButNeverPending) {
  StateSnapshotPool pool(4, 2);
  const auto a = pool.reserve(h(1));
  const auto b = pool.reserve(h(2));
  EXPECT_FALSE(pool.reserve(h(3)).has_value());  // both pending: nothing to evict
  pool.begin_step();
  ASSERT_TRUE(pool.lookup(h(1)).has_value());  // 1 used: 2 is now the oldest
  const auto c = pool.reserve(h(3));
  EXPECT_EQ(c, b);
  pool.begin_step();
  EXPECT_FALSE(pool.lookup(h(2)).has_value());
  EXPECT_EQ(pool.lookup(h(1)), a);
  EXPECT_EQ(pool.lookup(h(3)), c);
  EXPECT_EQ(pool.size(), 2);
  pool.clear();
  EXPECT_EQ(pool.size(), 0);
  EXPECT_FALSE(pool.lookup(h(1)).has_value());
}

TEST(StateSnapshotPool, ReleaseFreesItsSlotForTheNextReserve) {
  StateSnapshotPool pool(4, 2);
  const auto a = pool.reserve(h(1));
  const auto b = pool.reserve(h(2));
  pool.begin_step();
  pool.release(h(1));
  pool.release(h(9));  // absent: no-op
  EXPECT_EQ(pool.size(), 1);
  EXPECT_FALSE(pool.lookup(h(1)).has_value());
  EXPECT_EQ(pool.reserve(h(3)), a);  // no eviction needed
  pool.begin_step();
  EXPECT_EQ(pool.lookup(h(2)), b);
  EXPECT_TRUE(pool.contains(h(3)));
}

TEST(StateSnapshotPool, EvictsAStaleSnapshotBeforeTheLeastRecentlyUsed) {
  StateSnapshotPool pool(0, 3);
  std::set<int32_t> stale_blocks = {21};
  auto stale = [&](const BlockHash&, int32_t block) { return stale_blocks.contains(block); };
  const auto a = pool.reserve(h(1), 10, stale);
  const auto b = pool.reserve(h(2), 21, stale);
  const auto c = pool.reserve(h(3), 30, stale);
  pool.begin_step();
  ASSERT_TRUE(pool.lookup(h(1)) && pool.lookup(h(3)) && pool.lookup(h(2)));  // 2 most recent
  EXPECT_EQ(pool.reserve(h(4), 40, stale), b);  // 2's block lost its hash: evicted first
  pool.begin_step();
  EXPECT_FALSE(pool.lookup(h(2)).has_value());
  stale_blocks.clear();
  EXPECT_EQ(pool.reserve(h(5), 50, stale), a);  // none stale: least recently used (1)
  EXPECT_EQ(pool.lookup(h(3)), c);
}

TEST(StateSnapshotPool, NeedsAtLeastOneSlot) { EXPECT_THROW(StateSnapshotPool(0, 0), Error); }

}  // namespace
}  // namespace vtllm::engine
