// The GDN state snapshot budget build_engine gives hybrid prefix caching: bytes
// or a share of the cache memory, counted in whole state slots, none for a dense
// model or with prefix caching off; and the bundled hybrid model built with it.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "engine/engine_builder.h"
#include "models/registry.h"

namespace vtllm::engine {
namespace {

const std::string kModel = std::string(VTLLM_SOURCE_DIR) + "/models/tiny-qwen3.5";

TEST(PrefixBudget, SnapshotsFromBytesOrAShareOfTheCache) {
  EngineArgs a;
  const int64_t slot = 3000;
  // 10% of KV + snapshots: 0.1 / 0.9 of 900000 KV bytes is 100000 bytes, 33 slots.
  EXPECT_EQ(num_state_snapshots(a, slot, 900000), 33);
  // Sized from the device: the fraction is the cache plan's (plan_cache), not counted here.
  EXPECT_EQ(num_state_snapshots(a, slot, 0), 0);
  a.state_snapshot_bytes = 30000;
  EXPECT_EQ(num_state_snapshots(a, slot, 900000), 10);
  EXPECT_EQ(num_state_snapshots(a, slot, 0), 10);
  a.state_snapshot_bytes = 1;  // less than a slot still gets one
  EXPECT_EQ(num_state_snapshots(a, slot, 900000), 1);
  a.state_snapshot_bytes = 0;
  EXPECT_EQ(num_state_snapshots(a, slot, 900000), 0);
  a.state_snapshot_bytes.reset();
  a.state_snapshot_fraction = 0;
  EXPECT_EQ(num_state_snapshots(a, slot, 900000), 0);
  a.state_snapshot_fraction = 0.5;
  EXPECT_EQ(num_state_snapshots(a, slot, 900000), 300);
  EXPECT_EQ(num_state_snapshots(a, 0, 900000), 0);  // dense: no GDN state
  a.enable_prefix_caching = false;
  EXPECT_EQ(num_state_snapshots(a, slot, 900000), 0);
}

TEST(PrefixBudget, FlagsAreValidatedByName) {
  EngineArgs a;
  a.dir = kModel;
  a.state_snapshot_fraction = 1;
  EXPECT_THROW(a.validate(), Error);
  a.state_snapshot_fraction = 0.1;
  a.state_snapshot_stride = 24;  // not a multiple of 16
  try {
    a.validate();
    ADD_FAILURE() << "stride 24 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--state-snapshot-stride"), std::string::npos);
  }
}

TEST(PrefixBudget, TheBundledHybridModelGetsSnapshotsByDefault) {
  EngineArgs a;
  a.dir = kModel;
  a.max_num_seqs = 4;
  a.max_model_len = 512;
  a.quiet = true;
  const EngineParts p = build_engine(a);
  ASSERT_TRUE(p.hybrid);
  const KvCacheConfig& kv = p.runner->kv_config();
  const CacheFootprint f =
      cache_footprint(models::declare_cache_spec(p.model_config), kv.block_size, vt::DType::kF32);
  const double kv_bytes = double(kv.num_blocks - 1) * double(f.bytes_per_block);
  const double snapshot_bytes = double(kv.num_state_snapshots) * double(f.bytes_per_state_slot);
  EXPECT_GE(kv.num_state_snapshots, 1);
  // A tenth of KV + snapshots, to within one slot.
  EXPECT_NEAR(snapshot_bytes / (kv_bytes + snapshot_bytes), 0.1,
              double(f.bytes_per_state_slot) / (kv_bytes + snapshot_bytes));
  EXPECT_EQ(kv.snapshot_stride, 1024);
  EXPECT_EQ(p.engine.kv_cache.num_state_snapshots, kv.num_state_snapshots);
  a.enable_prefix_caching = false;
  EXPECT_EQ(build_engine(a).runner->kv_config().num_state_snapshots, 0);
}

}  // namespace
}  // namespace vtllm::engine
