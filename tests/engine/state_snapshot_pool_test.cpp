#include "engine/state_snapshot_pool.h"

#include <gtest/gtest.h>

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

TEST(StateSnapshotPool, NeedsAtLeastOneSlot) { EXPECT_THROW(StateSnapshotPool(0, 0), Error); }

}  // namespace
}  // namespace vtllm::engine
