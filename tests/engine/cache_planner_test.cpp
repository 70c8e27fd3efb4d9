// The KV-cache sizing arithmetic (engine/cache_planner.h), against sums written out
// by hand for a hybrid layout.
#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/cache_planner.h"

namespace vtllm::engine {
namespace {

models::CacheSpec hybrid_spec() {
  models::LayerCacheSpec gdn;
  gdn.kind = models::LayerCacheSpec::Kind::kGdn;
  gdn.conv_rows = 3;
  gdn.conv_dim = 8192;
  gdn.value_heads = 32;
  gdn.key_head_dim = 128;
  gdn.value_head_dim = 128;
  models::LayerCacheSpec attn;
  attn.kind = models::LayerCacheSpec::Kind::kAttention;
  attn.kv_heads = 4;
  attn.head_dim = 256;
  return {gdn, gdn, gdn, attn, gdn, gdn, gdn, attn};
}

TEST(CacheSizing, FootprintCountsEveryLayer) {
  const CacheFootprint f = cache_footprint(hybrid_spec(), 16, vt::DType::kBF16);
  // 2 attention layers x (K and V) x 16 tokens x 4 heads x 256 x 2 bytes.
  EXPECT_EQ(f.bytes_per_block, 2 * 2 * 16 * 4 * 256 * 2);
  // 6 GDN layers x 4 bytes x (3 x 8192 conv + 32 x 128 x 128 recurrent).
  EXPECT_EQ(f.bytes_per_state_slot, 6 * 4 * (3 * 8192 + 32 * 128 * 128));
  EXPECT_EQ(cache_footprint(hybrid_spec(), 16, vt::DType::kF32).bytes_per_block,
            2 * f.bytes_per_block);
}

TEST(CacheSizing, BlocksAreWhatUtilizationLeaves) {
  const CacheFootprint f = cache_footprint(hybrid_spec(), 16, vt::DType::kBF16);
  const uint64_t gib = uint64_t(1) << 30;
  const uint64_t total = 140 * gib, in_use = 17 * gib, act = 3 * gib;
  const CachePlan p = plan_cache(0.9, total, in_use, 16 * gib, act, 2048, 256, 16, f);
  const double left = 0.9 * double(total) - double(in_use) - double(act) -
                      256.0 * double(f.bytes_per_state_slot);
  EXPECT_EQ(p.num_blocks, int32_t(left / double(f.bytes_per_block)));
  EXPECT_EQ(p.state_bytes, 256u * uint64_t(f.bytes_per_state_slot));
  EXPECT_LE(double(p.kv_bytes()), left);
  EXPECT_GT(double(p.kv_bytes() + p.bytes_per_block), left);
  const std::string line = p.describe();
  EXPECT_NE(line.find(std::to_string(p.num_blocks) + " blocks of 16 tokens"), std::string::npos)
      << line;
  // More utilization, more blocks; more state slots, fewer.
  EXPECT_GT(plan_cache(0.95, total, in_use, 0, act, 2048, 256, 16, f).num_blocks, p.num_blocks);
  EXPECT_LT(plan_cache(0.9, total, in_use, 0, act, 2048, 512, 16, f).num_blocks, p.num_blocks);
}

TEST(CacheSizing, SnapshotsTakeTheirShareOfWhatIsLeftAfterTheWeights) {
  const CacheFootprint f = cache_footprint(hybrid_spec(), 16, vt::DType::kBF16);
  const uint64_t gib = uint64_t(1) << 30;
  const uint64_t total = 140 * gib, act = 3 * gib;
  const double slot = double(f.bytes_per_state_slot);
  for (const uint64_t in_use : {17 * gib, 60 * gib}) {  // a 9B and a 27B-class load
    const CachePlan p = plan_cache(0.9, total, in_use, in_use - gib, act, 2048, 256, 16, f, 0, 0.1);
    const double left = 0.9 * double(total) - double(in_use) - double(act) - 256.0 * slot;
    EXPECT_EQ(p.num_state_snapshots, int32_t(0.1 * left / slot)) << in_use;
    EXPECT_EQ(p.num_state_slots, 256 + p.num_state_snapshots);
    EXPECT_EQ(p.state_bytes, uint64_t(p.num_state_slots) * uint64_t(f.bytes_per_state_slot));
    // The KV blocks get the rest: snapshots are 10% of KV + snapshots, to a block.
    EXPECT_EQ(p.num_blocks, int32_t((left - p.num_state_snapshots * slot) / double(f.bytes_per_block)));
    const double share = p.num_state_snapshots * slot / (p.num_state_snapshots * slot + double(p.kv_bytes()));
    EXPECT_NEAR(share, 0.1, 0.001) << in_use;
    EXPECT_NE(p.describe().find(std::to_string(p.num_state_snapshots) + " of them planned snapshots"),
              std::string::npos);
  }
  // Without a fraction: no snapshots added, as before.
  EXPECT_EQ(plan_cache(0.9, total, 17 * gib, 16 * gib, act, 2048, 256, 16, f).num_state_snapshots, 0);
  // A dense model (no state slot bytes) gets none even with a fraction.
  models::LayerCacheSpec attn = hybrid_spec().back();
  EXPECT_EQ(plan_cache(0.9, total, 17 * gib, 16 * gib, act, 2048, 0, 16,
                       cache_footprint({attn}, 16, vt::DType::kBF16), 0, 0.1)
                .num_state_snapshots,
            0);
  EXPECT_THROW(plan_cache(0.9, total, 17 * gib, 16 * gib, act, 2048, 256, 16, f, 0, 1.0), Error);
}

TEST(CacheSizing, RefusesWhenNoBlockFits) {
  const CacheFootprint f = cache_footprint(hybrid_spec(), 16, vt::DType::kBF16);
  const uint64_t gib = uint64_t(1) << 30;
  EXPECT_THROW(plan_cache(0.5, 140 * gib, 70 * gib, 60 * gib, gib, 2048, 0, 16, f), Error);
  EXPECT_THROW(plan_cache(1.5, 140 * gib, gib, gib, gib, 2048, 0, 16, f), Error);
  models::LayerCacheSpec gdn = hybrid_spec()[0];
  EXPECT_THROW(plan_cache(0.9, 140 * gib, gib, gib, gib, 2048, 1,  16,
                          cache_footprint({gdn}, 16, vt::DType::kBF16)),
               Error);
}

}  // namespace
}  // namespace vtllm::engine
