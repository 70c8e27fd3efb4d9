#include "engine/step_plan.h"

#include <gtest/gtest.h>

#include <numeric>

namespace vtllm::engine {
namespace {

std::unique_ptr<Request> req(const std::string& id, int n, int32_t start) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  SamplingParams p;
  p.max_tokens = 8;
  return std::make_unique<Request>(id, t, p);
}

TEST(StepPlan, FlattensChunksWithSlotsPositionsAndBlockTable) {
  SchedulerConfig sc;
  sc.max_num_batched_tokens = 12;
  sc.max_model_len = 40;
  KvCacheConfig kc;
  kc.block_size = 4;
  kc.num_blocks = 30;
  Scheduler s(sc, kc);
  s.add_request(req("a", 5, 100));
  s.add_request(req("b", 10, 200));
  const SchedulerOutput out = s.schedule();  // a: 5 tokens, b: 7 of 10
  const StepPlan fb = build_step_plan(out, 4);
  ASSERT_EQ(fb.num_requests(), 2);
  ASSERT_EQ(fb.num_tokens(), 12);
  EXPECT_EQ(fb.query_start_loc, (std::vector<int32_t>{0, 5, 12}));
  EXPECT_EQ(fb.seq_lens, (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(fb.context_lens, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(fb.max_blocks_per_seq, 2);
  EXPECT_TRUE(fb.state_slots.empty());
  // Every token's slot is (its block from the request's own list) * 4 + offset.
  for (int b = 0; b < 2; ++b) {
    const auto blocks = out.requests[b].block_ids;
    for (int t = fb.query_start_loc[b]; t < fb.query_start_loc[b + 1]; ++t) {
      const int64_t pos = fb.positions[t];
      EXPECT_EQ(fb.slot_mapping[t], blocks[pos / 4] * 4 + pos % 4);
      EXPECT_EQ(fb.token_ids[t], out.requests[b].request->all_token_ids[pos]);
      EXPECT_EQ(fb.block_table[b * 2 + pos / 4], blocks[pos / 4]);
    }
  }
  // Only a's step reaches its end; b's chunk wants no logits.
  EXPECT_EQ(fb.logits_indices, (std::vector<int32_t>{4}));
  EXPECT_EQ(fb.logits_requests, (std::vector<int32_t>{0}));

  SampledTokens st;
  st.tokens = {{9}, {}};
  s.update_from_output(out, st);
  const SchedulerOutput out2 = s.schedule();  // a decodes 1, b finishes 3
  const StepPlan fb2 = build_step_plan(out2, 4);
  EXPECT_EQ(fb2.query_start_loc, (std::vector<int32_t>{0, 1, 4}));
  EXPECT_EQ(fb2.context_lens, (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(fb2.seq_lens, (std::vector<int32_t>{6, 10}));
  EXPECT_EQ(fb2.positions, (std::vector<int64_t>{5, 7, 8, 9}));
  EXPECT_EQ(fb2.token_ids[0], 9);
  EXPECT_EQ(fb2.max_blocks_per_seq, 3);
  EXPECT_EQ(fb2.block_table[2], kNullBlock);  // a has 2 blocks: padded
  EXPECT_EQ(fb2.logits_indices, (std::vector<int32_t>{0, 3}));
}

TEST(StepPlan, HybridBatchesCarryStateSlots) {
  SchedulerConfig sc;
  sc.max_model_len = 40;
  KvCacheConfig kc;
  kc.block_size = 4;
  kc.num_blocks = 30;
  kc.num_state_slots = 4;
  Scheduler s(sc, kc);
  s.add_request(req("a", 5, 100));
  s.add_request(req("b", 6, 200));
  const StepPlan fb = build_step_plan(s.schedule(), 4);
  ASSERT_EQ(fb.state_slots.size(), 2u);
  EXPECT_NE(fb.state_slots[0], fb.state_slots[1]);
}

}  // namespace
}  // namespace vtllm::engine
