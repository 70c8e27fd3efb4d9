// A randomized workload through LlmEngine and the fake model: hundreds of
// requests of random lengths (many sharing prefixes), random sampling
// parameters, random aborts, a cache so small that preemption is constant.
// Every request must end exactly once (finished or aborted), every block and
// slot must come back, and every deterministic request (greedy or seeded)
// must produce exactly what it produces alone.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine/llm_engine.h"
#include "fake_model.h"

namespace vtllm::engine {
namespace {

using testing::FakeModel;
constexpr int64_t kVocab = 64;
constexpr int kBlockSize = 4;

struct Workload {
  uint32_t seed;
  bool hybrid;
  SchedulingPolicy policy;
  int32_t snapshots = 0;  // hybrid prefix caching
};

EngineConfig config_for(const Workload& w, int32_t blocks, int64_t budget, int seqs) {
  EngineConfig c;
  c.scheduler.max_num_batched_tokens = budget;
  c.scheduler.max_num_seqs = seqs;
  c.scheduler.max_model_len = 64;
  c.scheduler.policy = w.policy;
  c.kv_cache.block_size = kBlockSize;
  c.kv_cache.num_blocks = blocks;
  c.kv_cache.num_state_slots = w.hybrid ? seqs : 0;
  c.kv_cache.num_state_snapshots = w.hybrid ? w.snapshots : 0;
  c.sampler.seed = w.seed;
  c.eos_token_ids = {0, 1};
  return c;
}

struct Item {
  std::string id;
  std::vector<int32_t> prompt;
  SamplingParams params;
  int priority = 0;
  bool deterministic = false;
};

std::vector<Item> make_items(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  auto tokens = [&](int n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = 2 + static_cast<int32_t>(rng() % (kVocab - 2));
    return t;
  };
  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 5; ++i) prefixes.push_back(tokens(8 + rng() % 25));
  std::vector<Item> items;
  for (int i = 0; i < count; ++i) {
    Item it;
    it.id = "w" + std::to_string(i);
    if (rng() % 2) it.prompt = prefixes[rng() % prefixes.size()];
    const auto suffix = tokens(1 + rng() % 16);
    it.prompt.insert(it.prompt.end(), suffix.begin(), suffix.end());
    SamplingParams& p = it.params;
    p.max_tokens = 1 + rng() % 24;
    const int kind = rng() % 4;
    p.temperature = kind == 0 ? 0.0f : 0.6f + (rng() % 80) / 100.0f;
    if (kind == 1 || kind == 2) p.seed = rng();
    if (kind == 2) {
      p.top_k = 1 + rng() % 30;
      p.top_p = 0.6f + (rng() % 40) / 100.0f;
      p.min_p = (rng() % 8) / 100.0f;
    }
    if (rng() % 3 == 0) p.repetition_penalty = 0.8f + (rng() % 60) / 100.0f;
    if (rng() % 3 == 0) p.frequency_penalty = (static_cast<int>(rng() % 41) - 20) / 10.0f;
    if (rng() % 3 == 0) p.presence_penalty = (static_cast<int>(rng() % 41) - 20) / 10.0f;
    if (rng() % 4 == 0) p.ignore_eos = true;
    if (rng() % 4 == 0) p.min_tokens = rng() % (p.max_tokens + 1);
    if (rng() % 5 == 0) p.stop_token_ids = {static_cast<int32_t>(2 + rng() % 10)};
    if (rng() % 6 == 0) p.logit_bias = {{static_cast<int32_t>(rng() % kVocab), 2.0f}};
    if (rng() % 8 == 0 && kind != 3) p.n = 2;
    it.priority = static_cast<int>(rng() % 3);
    it.deterministic = kind != 3;
    items.push_back(std::move(it));
  }
  return items;
}

struct Track {
  std::vector<int32_t> tokens;
  FinishReason reason = FinishReason::kNone;
  int finals = 0;
  bool aborted = false;
  bool output_after_end = false;
};
using Key = std::pair<std::string, int>;

std::map<Key, Track> solo(const Workload& w, const Item& it) {
  LlmEngine e(config_for(w, 40, 64, 4),
              std::make_unique<FakeModel>(kVocab, 40, kBlockSize, w.hybrid ? 4 + w.snapshots : 0));
  e.add_request(it.id, it.prompt, it.params, it.priority);
  std::map<Key, Track> out;
  while (e.has_unfinished())
    for (const auto& o : e.step()) {
      Track& t = out[{o.request_id, o.index}];
      t.tokens.insert(t.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      if (o.finished) t.reason = o.finish_reason;
    }
  return out;
}

void run_workload(const Workload& w) {
  const int kRequests = 300;
  const auto items = make_items(w.seed, kRequests);
  std::mt19937 rng(w.seed ^ 0xabcdef);
  // 16 blocks of 4 tokens: exactly one max_model_len request; 16 sequences compete.
  const auto config = config_for(w, 17, 48, 16);
  auto model = std::make_unique<FakeModel>(kVocab, 17, kBlockSize, w.hybrid ? 16 + w.snapshots : 0);
  LlmEngine engine(config, std::move(model));

  std::map<Key, Track> tracks;
  std::set<std::string> live;
  size_t next = 0;
  int steps = 0;
  while (next < items.size() || engine.has_unfinished()) {
    ASSERT_LT(++steps, 200000) << "workload did not drain";
    for (int k = rng() % 4; k > 0 && next < items.size(); --k, ++next) {
      const Item& it = items[next];
      engine.add_request(it.id, it.prompt, it.params, it.priority);
      live.insert(it.id);
    }
    if (!live.empty() && rng() % 25 == 0) {
      auto victim = live.begin();
      std::advance(victim, rng() % live.size());
      EXPECT_TRUE(engine.abort(*victim));
      for (int i = 0; i < 2; ++i) tracks[{*victim, i}].aborted = true;
      live.erase(victim);
    }
    for (const EngineOutput& o : engine.step()) {
      Track& t = tracks[{o.request_id, o.index}];
      if (t.finals > 0 || t.aborted) t.output_after_end = true;
      t.tokens.insert(t.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      if (o.finished) {
        ++t.finals;
        t.reason = o.finish_reason;
      }
    }
    // A parent stays live until all its samples have ended.
    for (auto it = live.begin(); it != live.end();) {
      const Item& item = items[std::stoi(it->substr(1))];
      bool all = true;
      for (int i = 0; i < item.params.n; ++i) all = all && tracks[{*it, i}].finals == 1;
      it = all ? live.erase(it) : std::next(it);
    }
  }
  EXPECT_TRUE(live.empty());
  const SchedulerStats st = engine.stats();
  EXPECT_EQ(st.kv.num_free_blocks, st.kv.num_blocks) << "blocks leaked";
  EXPECT_EQ(st.kv.num_free_state_slots, st.kv.num_state_slots) << "state slots leaked";
  EXPECT_EQ(st.num_running + st.num_waiting, 0);
  EXPECT_GT(st.num_preemptions, 10) << "the workload should preempt";
  if (!w.hybrid || w.snapshots > 0) {
    EXPECT_GT(st.kv.prefix_hits, 0) << "shared prefixes should hit";
  } else {
    EXPECT_EQ(st.kv.prefix_hits, 0);
  }

  int compared = 0, aborted = 0;
  for (const Item& it : items) {
    for (int i = 0; i < it.params.n; ++i) {
      const Track& t = tracks[{it.id, i}];
      EXPECT_FALSE(t.output_after_end) << it.id;
      if (t.aborted) {
        ++aborted;
        EXPECT_LE(t.finals, 1) << it.id;
        continue;
      }
      ASSERT_EQ(t.finals, 1) << it.id << "#" << i << " did not end exactly once";
      EXPECT_LE(static_cast<int64_t>(t.tokens.size()), it.params.max_tokens);
    }
    if (!it.deterministic || tracks[{it.id, 0}].aborted) continue;
    const auto want = solo(w, it);
    for (const auto& [key, t] : want) {
      EXPECT_EQ(tracks[key].tokens, t.tokens) << key.first << "#" << key.second;
      EXPECT_EQ(tracks[key].reason, t.reason) << key.first;
    }
    ++compared;
  }
  EXPECT_GT(compared, 150);
  EXPECT_GT(aborted, 3);
}

TEST(LlmEngineWorkload, FcfsDrainsWithoutLeaksAndKeepsOutputs) {
  run_workload({11, false, SchedulingPolicy::kFcfs});
}

TEST(LlmEngineWorkload, PriorityDrainsWithoutLeaksAndKeepsOutputs) {
  run_workload({12, false, SchedulingPolicy::kPriority});
}

TEST(LlmEngineWorkload, HybridDrainsWithoutLeaksAndKeepsOutputs) {
  run_workload({13, true, SchedulingPolicy::kFcfs});
}

TEST(LlmEngineWorkload, HybridWithStateSnapshotsHitsAndKeepsOutputs) {
  run_workload({14, true, SchedulingPolicy::kFcfs, 6});
}

}  // namespace
}  // namespace vtllm::engine
