// Hybrid prefix caching through GDN state snapshots, on the fake model (whose
// "state" is a running hash of every token a slot consumed, so a restored
// snapshot from the wrong position or prefix changes the sampled tokens): each
// warm run (an engine that served earlier turns) must sample exactly what a cold
// engine samples for the same prompt, and must reuse the expected tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "base/error.h"
#include "engine/kv_cache_manager.h"
#include "engine/llm_engine.h"
#include "fake_model.h"

namespace vtllm::engine {
namespace {

using testing::FakeModel;
constexpr int64_t kVocab = 64;
constexpr int kBlockSize = 4;

EngineConfig hybrid_config(int64_t budget = 64, int64_t stride = 0, bool inside_steps = true) {
  EngineConfig c;
  c.scheduler.max_num_batched_tokens = budget;
  c.scheduler.max_num_seqs = 4;
  c.scheduler.max_model_len = 160;
  c.kv_cache.block_size = kBlockSize;
  c.kv_cache.num_blocks = 200;
  c.kv_cache.num_state_slots = 4;
  c.kv_cache.num_state_snapshots = 8;
  c.kv_cache.snapshot_stride = stride;
  if (!inside_steps) c.kv_cache.max_save_tail = 0;
  c.sampler.seed = 7;
  c.eos_token_ids = {0};
  return c;
}

std::vector<int32_t> random_tokens(std::mt19937& rng, int n) {
  std::vector<int32_t> p(n);
  for (auto& t : p) t = 1 + static_cast<int32_t>(rng() % (kVocab - 1));
  return p;
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

SamplingParams greedy(int64_t max_tokens, bool ignore_eos = true) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.ignore_eos = ignore_eos;
  p.max_tokens = max_tokens;
  return p;
}

struct Turn {
  std::vector<int32_t> tokens;
  int64_t cached = -1;
  int64_t computed = 0;  // tokens the model ran for this request
};

// One engine serving requests one after another (each to completion).
class Session {
 public:
  explicit Session(const EngineConfig& config) {
    auto model = std::make_unique<FakeModel>(
        kVocab, config.kv_cache.num_blocks, kBlockSize,
        config.kv_cache.num_state_slots + config.kv_cache.num_state_snapshots);
    model_ = model.get();
    engine_ = std::make_unique<LlmEngine>(config, std::move(model));
  }
  Turn serve(const std::vector<int32_t>& prompt, int64_t max_tokens, bool ignore_eos = true) {
    const int64_t before = model_->tokens_computed();
    engine_->add_request("r" + std::to_string(next_++), prompt, greedy(max_tokens, ignore_eos));
    Turn t;
    while (engine_->has_unfinished())
      for (const EngineOutput& o : engine_->step()) {
        t.tokens.insert(t.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
        if (o.finished) t.cached = o.num_cached_tokens;
      }
    t.computed = model_->tokens_computed() - before;
    const SchedulerStats st = engine_->stats();
    EXPECT_EQ(st.kv.num_free_blocks, st.kv.num_blocks);
    EXPECT_EQ(st.kv.num_free_state_slots, st.kv.num_state_slots);
    return t;
  }
  SchedulerStats stats() const { return engine_->stats(); }

 private:
  FakeModel* model_ = nullptr;
  std::unique_ptr<LlmEngine> engine_;
  int next_ = 0;
};

Turn cold(const std::vector<int32_t>& prompt, int64_t max_tokens, int64_t budget = 64,
          bool ignore_eos = true) {
  EngineConfig c = hybrid_config(budget);
  c.kv_cache.enable_prefix_caching = false;
  return Session(c).serve(prompt, max_tokens, ignore_eos);
}

int64_t floor_block(int64_t n) { return n / kBlockSize * kBlockSize; }

// Snapshots saved inside the steps (the default) or by ending the chunks at them.
class SnapshotMode : public ::testing::TestWithParam<bool> {};

// Length-only requests (ignore_eos) snapshot once past the prompt, at their last
// boundary; those that may stop at eos at every boundary: both leave that one.
class NextTurn : public ::testing::TestWithParam<bool> {};

TEST_P(NextTurn, HitsTheEndOfThePreviousResponse) {
  const bool ignore_eos = GetParam();
  std::mt19937 rng(ignore_eos ? 1 : 11);
  Session s(hybrid_config());
  auto history = random_tokens(rng, 30);
  int64_t expected_hit = 0;
  for (int turn = 0; turn < 6; ++turn) {
    const Turn t = s.serve(history, 9, ignore_eos);
    const Turn ref = cold(history, 9, 64, ignore_eos);
    EXPECT_EQ(t.tokens, ref.tokens) << "turn " << turn;
    EXPECT_EQ(t.cached, expected_hit) << "turn " << turn;
    EXPECT_EQ(t.computed, ref.computed - expected_hit) << "turn " << turn;
    // The request computed its prompt and all but its last sampled token: its
    // tail snapshot sits at the last block boundary of those.
    const int64_t computed = int64_t(history.size() + t.tokens.size()) - 1;
    expected_hit = floor_block(computed);
    history = cat(cat(history, t.tokens), random_tokens(rng, 5));
  }
}

INSTANTIATE_TEST_SUITE_P(EosOrLength, NextTurn, ::testing::Values(true, false));

TEST_P(SnapshotMode, RewrittenAnswerHitsThePreviousPromptBoundary) {
  std::mt19937 rng(2);
  Session s(hybrid_config(64, 0, GetParam()));
  auto history = random_tokens(rng, 30);
  for (int turn = 0; turn < 3; ++turn) {
    const Turn t = s.serve(history, 7);
    const Turn ref = cold(history, 7);
    EXPECT_EQ(t.tokens, ref.tokens) << "turn " << turn;
    // The answer is replaced by other text: only the prompt's snapshots apply, the
    // last at its last block boundary (its end when that is one).
    const int64_t prompt_boundary = floor_block(int64_t(history.size()));
    history = cat(cat(history, random_tokens(rng, 7)), random_tokens(rng, 4));
    const Turn next = s.serve(history, 1);
    EXPECT_EQ(next.cached, prompt_boundary) << "turn " << turn;
    EXPECT_EQ(next.tokens, cold(history, 1).tokens) << "turn " << turn;
  }
}

TEST_P(SnapshotMode, SharedSystemPrefixHitsFromTheThirdConversation) {
  std::mt19937 rng(3);
  Session s(hybrid_config(64, 0, GetParam()));
  const auto system = random_tokens(rng, 18);  // 4 full blocks, then 2 tokens
  for (int conv = 0; conv < 4; ++conv) {
    const auto prompt = cat(system, random_tokens(rng, 7));
    const Turn t = s.serve(prompt, 5);
    const Turn ref = cold(prompt, 5);
    EXPECT_EQ(t.tokens, ref.tokens) << "conversation " << conv;
    // The second finds the 4 blocks cached without a state there and snapshots
    // at 16 on its way; later ones hit them.
    EXPECT_EQ(t.cached, conv < 2 ? 0 : 16) << "conversation " << conv;
    EXPECT_EQ(t.computed, ref.computed - t.cached);
  }
}

TEST_P(SnapshotMode, StrideSnapshotsLetADivergingPromptHit) {
  std::mt19937 rng(4);
  // Budget 20, stride 8: the first chunk of a 40-token prompt snapshots at 16 (the
  // furthest stride point it passes), the next at the prompt boundary 36; inside the
  // steps, or by ending the chunks there.
  const EngineConfig c = hybrid_config(20, 8, GetParam());
  Session s(c);
  const auto shared = random_tokens(rng, 18);
  const auto a = cat(shared, random_tokens(rng, 22));
  EXPECT_EQ(s.serve(a, 3).tokens, cold(a, 3, 20).tokens);
  const auto b = cat(shared, random_tokens(rng, 9));
  const Turn t = s.serve(b, 3);
  EXPECT_EQ(t.cached, 16);
  EXPECT_EQ(t.tokens, cold(b, 3, 20).tokens);
}

TEST_P(SnapshotMode, AWrongSnapshotIsNeverPicked) {
  std::mt19937 rng(5);
  Session s(hybrid_config(64, 0, GetParam()));
  // Equal first and last blocks, different middle: the last blocks' chained
  // hashes differ, so b may not restore a's state at 12 (nor any other).
  const auto head = random_tokens(rng, 4), tail = random_tokens(rng, 4);
  const auto a = cat(cat(cat(head, random_tokens(rng, 4)), tail), {5});
  const auto b = cat(cat(cat(head, random_tokens(rng, 4)), tail), {5});
  ASSERT_NE(a, b);
  EXPECT_EQ(s.serve(a, 6).tokens, cold(a, 6).tokens);
  const Turn t = s.serve(b, 6);
  EXPECT_EQ(t.cached, 0);
  EXPECT_EQ(t.tokens, cold(b, 6).tokens);
  // Same tokens as a but after a different first block: no hit either.
  auto c = a;
  const auto other = random_tokens(rng, 4);
  std::copy(other.begin(), other.end(), c.begin());
  const Turn tc = s.serve(c, 6);
  EXPECT_EQ(tc.cached, 0);
  EXPECT_EQ(tc.tokens, cold(c, 6).tokens);
}

INSTANTIATE_TEST_SUITE_P(InsideStepsOrChunkEnds, SnapshotMode, ::testing::Values(true, false));

// The KvCacheManager-level tests' cache: blocks of 4 tokens, 2 running slots, 4 snapshots.
KvCacheConfig small_cache(int64_t stride, int64_t max_save_tail) {
  KvCacheConfig c;
  c.block_size = 4;
  c.num_blocks = 40;
  c.num_state_slots = 2;
  c.num_state_snapshots = 4;
  c.snapshot_stride = stride;
  c.max_save_tail = max_save_tail;
  return c;
}

// Their 30-token prompt 1, 2, ..., 30 (last block boundary 28).
std::vector<int32_t> prompt30() {
  std::vector<int32_t> p(30);
  for (int i = 0; i < 30; ++i) p[i] = 1 + i;
  return p;
}

// `first` takes prompt30's 30 tokens in `kv` (7 blocks cached, no snapshot yet);
// the request returned shares its first 16 tokens (4 blocks) and differs at 17.
Request sharing_16(KvCacheManager& kv, Request& first) {
  EXPECT_TRUE(kv.allocate_slots(first, 30));
  auto q = prompt30();
  q[17] = 99;
  return Request("second", q, {});
}

TEST(PrefixSnapshot, ChunksEndWhereSnapshotsAreDue) {
  KvCacheConfig c = small_cache(8, 0);
  KvCacheManager kv(c);
  Request r("r", prompt30(), {});
  EXPECT_EQ(kv.prefill_boundary(r), 28);
  EXPECT_EQ(kv.prefill_chunk(r, 0, 30), 28);   // the boundary
  EXPECT_EQ(kv.prefill_chunk(r, 0, 27), 24);   // the furthest stride multiple passed
  EXPECT_EQ(kv.prefill_chunk(r, 0, 7), 7);     // passes none
  EXPECT_EQ(kv.prefill_chunk(r, 17, 13), 11);  // 17 -> 28
  EXPECT_EQ(kv.prefill_chunk(r, 28, 2), 2);    // past the boundary: uncut
  // Where a cached chain without a snapshot ends comes before the stride.
  c.snapshot_stride = 12;
  KvCacheManager shared(c);
  Request first("first", prompt30(), {});
  Request second = sharing_16(shared, first);
  const PrefixHit hit = shared.get_computed_blocks(second);
  EXPECT_EQ(hit.num_tokens, 0);
  EXPECT_EQ(hit.num_shared_tokens, 16);
  EXPECT_EQ(shared.prefill_chunk(second, 0, 16), 16);  // not 12
  EXPECT_EQ(shared.prefill_chunk(second, 0, 30), 16);
  EXPECT_EQ(shared.prefill_chunk(second, 16, 14), 12);  // then the prompt boundary, 28
  c.snapshot_stride = 6;
  EXPECT_THROW(KvCacheManager bad(c), Error);
}

// Inside the steps a chunk is cut only when it passes two snapshot points.
TEST(PrefixSnapshot, ChunksPassingOnePointAreNotCutInsideSteps) {
  const KvCacheConfig c = small_cache(12, 64);
  KvCacheManager kv(c);
  Request r("r", prompt30(), {});
  EXPECT_EQ(kv.prefill_chunk(r, 0, 30), 30);   // the boundary 28, inside
  EXPECT_EQ(kv.prefill_chunk(r, 0, 27), 27);   // the stride point 24, inside
  EXPECT_EQ(kv.prefill_chunk(r, 17, 13), 13);  // 28, inside
  ASSERT_TRUE(kv.allocate_slots(r, 27));
  r.num_computed_tokens = 27;
  const auto save = kv.snapshot_within(r, 0, 27);
  ASSERT_TRUE(save.has_value());
  EXPECT_EQ(save->offset, 24);
  EXPECT_GE(save->slot, 2);  // a snapshot slot
  EXPECT_FALSE(kv.snapshot_after(r, 27).has_value());
  EXPECT_FALSE(kv.snapshot_within(r, 0, 24).has_value());  // ends there: snapshot_after's
  KvCacheManager shared(c);
  Request first("first", prompt30(), {});
  Request second = sharing_16(shared, first);
  EXPECT_EQ(shared.get_computed_blocks(second).num_shared_tokens, 16);
  EXPECT_EQ(shared.prefill_chunk(second, 0, 20), 20);  // 16 inside
  EXPECT_EQ(shared.prefill_chunk(second, 0, 30), 28);  // 16 inside, 28 at the end
  ASSERT_TRUE(shared.allocate_slots(second, 28));
  second.num_computed_tokens = 28;
  const auto mid = shared.snapshot_within(second, 0, 28);
  ASSERT_TRUE(mid.has_value());
  EXPECT_EQ(mid->offset, 16);
  const auto end = shared.snapshot_after(second, 28);
  ASSERT_TRUE(end.has_value());
  EXPECT_NE(end->dst, mid->slot);
  // Past the boundary nothing is saved inside a step.
  EXPECT_FALSE(shared.snapshot_within(second, 28, 30).has_value());
}

// A save inside a step reruns the tokens after its point: past max_save_tail of them the
// chunk ends at the point instead.
TEST(PrefixSnapshot, LongSaveTailsEndTheChunkAtThePoint) {
  const KvCacheConfig c = small_cache(12, 4);
  KvCacheManager kv(c);
  Request r("r", prompt30(), {});
  EXPECT_EQ(kv.prefill_chunk(r, 0, 30), 30);  // the boundary 28: a tail of 2
  EXPECT_EQ(kv.prefill_chunk(r, 0, 27), 27);  // the stride point 24: 3
  EXPECT_EQ(kv.prefill_chunk(r, 0, 20), 12);  // the stride point 12: 8, cut
  KvCacheManager shared(c);
  Request first("first", prompt30(), {});
  Request second = sharing_16(shared, first);
  EXPECT_EQ(shared.get_computed_blocks(second).num_shared_tokens, 16);
  EXPECT_EQ(shared.prefill_chunk(second, 0, 18), 18);   // 16 inside: a tail of 2
  EXPECT_EQ(shared.prefill_chunk(second, 0, 30), 16);   // 16 then 28: a tail of 12, cut
  EXPECT_EQ(shared.prefill_chunk(second, 16, 14), 14);  // 28 inside
}

}  // namespace
}  // namespace vtllm::engine
