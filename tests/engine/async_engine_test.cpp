#include "engine/async_engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "base/error.h"
#include "fake_model.h"

namespace vtllm::engine {
namespace {

using testing::FakeModel;
constexpr int64_t kVocab = 64;

EngineConfig config() {
  EngineConfig c;
  c.scheduler.max_num_batched_tokens = 32;
  c.scheduler.max_model_len = 64;
  c.kv_cache.block_size = 4;
  c.kv_cache.num_blocks = 100;
  c.eos_token_ids = {0};
  return c;
}

// The fake model, slowed down so that aborts land mid-generation.
class SlowModel : public FakeModel {
 public:
  SlowModel() : FakeModel(kVocab, 100, 4) {}
  std::vector<float> logits(const StepPlan& fb) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return FakeModel::logits(fb);
  }
};

std::vector<int32_t> drain(RequestStream& s, FinishReason* reason = nullptr) {
  std::vector<int32_t> tokens;
  while (auto o = s.next()) {
    tokens.insert(tokens.end(), o->new_token_ids.begin(), o->new_token_ids.end());
    if (o->finished && reason) *reason = o->finish_reason;
  }
  return tokens;
}

SamplingParams seeded(uint64_t seed, int64_t max_tokens) {
  SamplingParams p;
  p.seed = seed;
  p.max_tokens = max_tokens;
  p.top_k = 20;
  return p;
}

TEST(AsyncEngine, ConcurrentClientsGetWhatTheSyncEngineProduces) {
  std::mt19937 rng(1);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; ++i) {
    std::vector<int32_t> p(3 + rng() % 20);
    for (auto& t : p) t = 1 + rng() % (kVocab - 1);
    prompts.push_back(p);
  }
  // Reference: the synchronous engine, all requests at once.
  std::vector<std::vector<int32_t>> want(8);
  {
    LlmEngine e(config(), std::make_unique<FakeModel>(kVocab, 100, 4));
    for (int i = 0; i < 8; ++i) e.add_request(std::to_string(i), prompts[i], seeded(i, 12));
    while (e.has_unfinished())
      for (const auto& o : e.step())
        want[std::stoi(o.request_id)].insert(want[std::stoi(o.request_id)].end(),
                                             o.new_token_ids.begin(), o.new_token_ids.end());
  }
  AsyncEngine engine(config(), std::make_unique<SlowModel>());
  std::vector<std::vector<int32_t>> got(8);
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i)
    clients.emplace_back([&, i] {
      auto s = engine.add_request(std::to_string(i), prompts[i], seeded(i, 12));
      got[i] = drain(*s);
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(got, want);
  engine.wait_idle();
  EXPECT_EQ(engine.stats().kv.num_free_blocks, engine.stats().kv.num_blocks);
}

TEST(AsyncEngine, AbortEndsTheStreamAndFreesTheBlocks) {
  AsyncEngine engine(config(), std::make_unique<SlowModel>());
  SamplingParams p;
  p.max_tokens = 60;
  p.ignore_eos = true;
  auto s = engine.add_request("long", {1, 2, 3}, p);
  ASSERT_TRUE(s->next().has_value());  // it is running
  engine.abort("long");
  FinishReason reason = FinishReason::kNone;
  const auto rest = drain(*s, &reason);
  EXPECT_EQ(reason, FinishReason::kAbort);
  EXPECT_LT(rest.size(), 59u);
  engine.wait_idle();
  EXPECT_EQ(engine.stats().kv.num_free_blocks, engine.stats().kv.num_blocks);
  EXPECT_EQ(engine.stats().num_running, 0);
}

TEST(AsyncEngine, DroppedStreamAbortsItsRequest) {
  AsyncEngine engine(config(), std::make_unique<SlowModel>());
  SamplingParams p;
  p.max_tokens = 60;
  p.ignore_eos = true;
  {
    auto s = engine.add_request("gone", {1, 2, 3}, p);
    ASSERT_TRUE(s->next().has_value());
  }  // the client disconnects
  engine.wait_idle();
  EXPECT_EQ(engine.stats().kv.num_free_blocks, engine.stats().kv.num_blocks);
  EXPECT_EQ(engine.stats().num_running + engine.stats().num_waiting, 0);
}

// Runs its first step, then holds every later step until the test opens the gate, so
// "the request is still running" does not depend on how busy the machine is.
class GatedModel : public FakeModel {
 public:
  explicit GatedModel(const std::atomic<bool>& open) : FakeModel(kVocab, 100, 4), open_(open) {}
  std::vector<float> logits(const StepPlan& fb) override {
    if (steps_++ > 0)
      while (!open_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return FakeModel::logits(fb);
  }

 private:
  const std::atomic<bool>& open_;
  int steps_ = 0;
};

TEST(AsyncEngine, RefusalsAreReportedToTheCaller) {
  std::atomic<bool> open{false};
  AsyncEngine engine(config(), std::make_unique<GatedModel>(open));
  SamplingParams bad;
  bad.min_p = 3.0f;
  EXPECT_THROW(engine.add_request("x", {1}, bad), Error);
  SamplingParams p;
  p.max_tokens = 50;
  p.ignore_eos = true;
  auto a = engine.add_request("dup", {1, 2}, p);
  const auto first = a->next();  // "dup" is running, held at its second step
  ASSERT_TRUE(first.has_value());
  auto b = engine.add_request("dup", {1, 2}, p);
  open = true;
  drain(*b);
  EXPECT_TRUE(b->error().has_value());
  EXPECT_NE(b->error()->find("dup"), std::string::npos);
  EXPECT_EQ(first->new_token_ids.size() + drain(*a).size(), 50u);
  EXPECT_FALSE(a->error().has_value());
}

TEST(AsyncEngine, ShutdownEndsOpenStreams) {
  std::shared_ptr<RequestStream> s;
  {
    AsyncEngine engine(config(), std::make_unique<SlowModel>());
    SamplingParams p;
    p.max_tokens = 60;
    p.ignore_eos = true;
    s = engine.add_request("open", {1, 2, 3}, p);
    ASSERT_TRUE(s->next().has_value());
  }
  FinishReason reason = FinishReason::kNone;
  drain(*s, &reason);
  EXPECT_EQ(reason, FinishReason::kAbort);
}

}  // namespace
}  // namespace vtllm::engine
