#include "engine/llm_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "base/error.h"
#include "fake_model.h"

namespace vtllm::engine {
namespace {

using testing::FakeModel;
constexpr int64_t kVocab = 64;
constexpr int kBlockSize = 4;

EngineConfig engine_config(int32_t blocks, int64_t budget = 64, int seqs = 32,
                           int32_t slots = 0) {
  EngineConfig c;
  c.scheduler.max_num_batched_tokens = budget;
  c.scheduler.max_num_seqs = seqs;
  c.scheduler.max_model_len = 64;
  c.kv_cache.block_size = kBlockSize;
  c.kv_cache.num_blocks = blocks;
  c.kv_cache.num_state_slots = slots;
  c.sampler.seed = 42;
  c.eos_token_ids = {0};
  return c;
}

struct Spec {
  std::string id;
  std::vector<int32_t> prompt;
  SamplingParams params;
};

struct Result {
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason reason = FinishReason::kNone;
  int finals = 0;
  int64_t cached = 0;
};

using Results = std::map<std::pair<std::string, int>, Result>;

void collect(const std::vector<EngineOutput>& outs, Results& res) {
  for (const EngineOutput& o : outs) {
    Result& r = res[{o.request_id, o.index}];
    r.tokens.insert(r.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
    r.text += o.new_text;
    if (o.finished) {
      r.reason = o.finish_reason;
      ++r.finals;
      r.cached = o.num_cached_tokens;
    }
  }
}

// Runs specs through an engine; returns per-(id, index) results and, through
// tokens_computed, how many tokens the model ran.
Results run(const EngineConfig& config, const std::vector<Spec>& specs,
            int64_t* tokens_computed = nullptr, SchedulerStats* stats = nullptr,
            std::unique_ptr<DetokenizerFactory> detok = nullptr) {
  auto model = std::make_unique<FakeModel>(
      kVocab, config.kv_cache.num_blocks, kBlockSize,
      config.kv_cache.num_state_slots + config.kv_cache.num_state_snapshots);
  const FakeModel* model_view = model.get();
  LlmEngine engine(config, std::move(model), std::move(detok));
  for (const Spec& s : specs) engine.add_request(s.id, s.prompt, s.params);
  Results res;
  int guard = 0;
  while (engine.has_unfinished()) {
    collect(engine.step(), res);
    if (++guard > 100000) ADD_FAILURE() << "engine did not finish";
  }
  if (stats) *stats = engine.stats();
  if (tokens_computed) *tokens_computed = model_view->tokens_computed();
  const SchedulerStats st = engine.stats();
  EXPECT_EQ(st.kv.num_free_blocks, st.kv.num_blocks);
  EXPECT_EQ(st.kv.num_free_state_slots, st.kv.num_state_slots);
  return res;
}

std::vector<int32_t> random_prompt(std::mt19937& rng, int n) {
  std::vector<int32_t> p(n);
  for (auto& t : p) t = 1 + static_cast<int32_t>(rng() % (kVocab - 1));  // no eos in prompts
  return p;
}

SamplingParams random_params(std::mt19937& rng, bool allow_unseeded = false) {
  SamplingParams p;
  p.max_tokens = 1 + rng() % 20;
  switch (rng() % (allow_unseeded ? 4 : 3)) {
    case 0: p.temperature = 0.0f; break;
    case 1:
      p.temperature = 0.5f + (rng() % 100) / 100.0f;
      p.seed = rng();
      break;
    case 2:
      p.temperature = 1.0f;
      p.top_k = 1 + rng() % 20;
      p.top_p = 0.5f + (rng() % 50) / 100.0f;
      p.min_p = (rng() % 10) / 100.0f;
      p.seed = rng();
      break;
    default: p.temperature = 1.0f; break;  // unseeded: engine stream
  }
  if (rng() % 3 == 0) p.repetition_penalty = 1.3f;
  if (rng() % 3 == 0) p.frequency_penalty = 0.5f;
  if (rng() % 3 == 0) p.presence_penalty = -0.5f;
  if (rng() % 4 == 0) p.ignore_eos = true;
  if (rng() % 4 == 0) p.min_tokens = std::min<int64_t>(p.max_tokens, rng() % 5);
  if (rng() % 5 == 0) p.logprobs = 3;
  return p;
}

std::vector<Spec> mixed_specs(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  std::vector<Spec> specs;
  for (int i = 0; i < count; ++i)
    specs.push_back({"r" + std::to_string(i), random_prompt(rng, 1 + rng() % 40), random_params(rng)});
  return specs;
}

void expect_same(const Results& got, const Results& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [key, w] : want) {
    const Result& g = got.at(key);
    EXPECT_EQ(g.tokens, w.tokens) << key.first << "#" << key.second;
    EXPECT_EQ(g.reason, w.reason) << key.first;
    EXPECT_EQ(g.finals, 1) << key.first;
  }
}

Results run_each_alone(const EngineConfig& config, const std::vector<Spec>& specs) {
  Results all;
  for (const Spec& s : specs)
    for (auto& [k, v] : run(config, {s})) all[k] = v;
  return all;
}

TEST(LlmEngine, BatchedRequestsProduceExactlyWhatEachProducesAlone) {
  const auto specs = mixed_specs(1, 12);
  const Results alone = run_each_alone(engine_config(200), specs);
  const Results together = run(engine_config(200, 32), specs);
  expect_same(together, alone);
  // The fake model reads tokens back through the cache: the outputs are not trivial.
  std::set<std::vector<int32_t>> distinct;
  for (const auto& [k, r] : alone) distinct.insert(r.tokens);
  EXPECT_GT(distinct.size(), 8u);
}

TEST(LlmEngine, TinyBlockBudgetPreemptsAndKeepsOutputs) {
  const auto specs = mixed_specs(2, 10);
  const Results alone = run_each_alone(engine_config(200), specs);
  SchedulerStats st;
  // 16 blocks hold one request of max_model_len 64; ten requests must take turns.
  const Results tight = run(engine_config(17, 64), specs, nullptr, &st);
  EXPECT_GT(st.num_preemptions, 0);
  expect_same(tight, alone);
}

TEST(LlmEngine, HybridModelKeepsOutputsUnderPreemption) {
  const auto specs = mixed_specs(3, 10);
  const Results alone = run_each_alone(engine_config(200, 64, 32, 4), specs);
  SchedulerStats st;
  const Results tight = run(engine_config(17, 64, 32, 3), specs, nullptr, &st);
  EXPECT_GT(st.num_preemptions, 0);
  expect_same(tight, alone);
}

TEST(LlmEngine, PrefixHitGivesSameOutputsWithFewerComputedTokens) {
  std::mt19937 rng(4);
  const auto shared = random_prompt(rng, 33);
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 6;
  Spec a{"a", shared, p}, b{"b", shared, p};
  b.prompt.push_back(5);
  int64_t cold_tokens = 0;
  const Results cold = run(engine_config(200), {b}, &cold_tokens);

  auto model = std::make_unique<FakeModel>(kVocab, 200, kBlockSize);
  FakeModel* warm_model = model.get();
  LlmEngine engine(engine_config(200), std::move(model));
  Results warm;
  engine.add_request(a.id, a.prompt, a.params);
  while (engine.has_unfinished()) collect(engine.step(), warm);
  const int64_t before = warm_model->tokens_computed();
  engine.add_request(b.id, b.prompt, b.params);
  while (engine.has_unfinished()) collect(engine.step(), warm);
  const int64_t b_tokens = warm_model->tokens_computed() - before;
  EXPECT_EQ(warm.at({"b", 0}).tokens, cold.at({"b", 0}).tokens);
  EXPECT_EQ(warm.at({"b", 0}).cached, 32);
  EXPECT_EQ(b_tokens, cold_tokens - 32);
}

TEST(LlmEngine, HybridPrefixHitThroughAStateSnapshot) {
  std::mt19937 rng(44);
  const auto shared = random_prompt(rng, 30);
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 6;
  auto config = engine_config(200, 64, 32, 4);
  config.kv_cache.num_state_snapshots = 4;
  int64_t cold_tokens = 0;
  Spec b{"b", shared, p};
  b.prompt.push_back(9);
  b.prompt.push_back(10);
  const Results cold = run(config, {b}, &cold_tokens);

  auto model = std::make_unique<FakeModel>(kVocab, 200, kBlockSize, 8);
  FakeModel* fake = model.get();
  LlmEngine engine(config, std::move(model));
  Results warm;
  engine.add_request("a", shared, p);
  while (engine.has_unfinished()) collect(engine.step(), warm);
  const int64_t before = fake->tokens_computed();
  engine.add_request(b.id, b.prompt, b.params);
  while (engine.has_unfinished()) collect(engine.step(), warm);
  // a's prompt (30 tokens) was snapshotted at its last boundary, 28; b reuses 28.
  EXPECT_EQ(warm.at({"b", 0}).cached, 28);
  EXPECT_EQ(warm.at({"b", 0}).tokens, cold.at({"b", 0}).tokens);
  EXPECT_EQ(fake->tokens_computed() - before, cold_tokens - 28);
  EXPECT_EQ(engine.stats().kv.num_free_state_slots, 4);
}

TEST(LlmEngine, AbortFreesEveryBlockAndSlot) {
  auto config = engine_config(60, 16, 8, 8);
  LlmEngine engine(config, std::make_unique<FakeModel>(kVocab, 60, kBlockSize, 8));
  std::mt19937 rng(5);
  for (int i = 0; i < 6; ++i) {
    SamplingParams p;
    p.max_tokens = 30;
    p.ignore_eos = true;
    engine.add_request("r" + std::to_string(i), random_prompt(rng, 10 + i), p);
  }
  for (int s = 0; s < 4; ++s) engine.step();
  EXPECT_LT(engine.stats().kv.num_free_blocks, engine.stats().kv.num_blocks);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(engine.abort("r" + std::to_string(i)));
  EXPECT_FALSE(engine.abort("r0"));
  EXPECT_FALSE(engine.has_unfinished());
  EXPECT_EQ(engine.stats().kv.num_free_blocks, engine.stats().kv.num_blocks);
  EXPECT_EQ(engine.stats().kv.num_free_state_slots, 8);
  EXPECT_TRUE(engine.step().empty());
}

TEST(LlmEngine, ParallelSamplingIsNSeededChildrenSharingThePrompt) {
  std::mt19937 rng(6);
  const auto prompt = random_prompt(rng, 24);
  SamplingParams p;
  p.temperature = 1.0f;
  p.max_tokens = 8;
  p.ignore_eos = true;
  p.seed = 100;
  p.n = 3;
  int64_t computed = 0;
  const Results par = run(engine_config(200), {{"x", prompt, p}}, &computed);
  ASSERT_EQ(par.size(), 3u);
  // Two of the three share the prompt's full blocks (24 tokens = 6 blocks, 5 reusable).
  EXPECT_LT(computed, 3 * 24 + 3 * 8);
  for (int i = 0; i < 3; ++i) {
    SamplingParams single = p;
    single.n = 1;
    single.seed = 100 + i;
    const Results one = run(engine_config(200), {{"y", prompt, single}});
    EXPECT_EQ(par.at({"x", i}).tokens, one.at({"y", 0}).tokens) << "child " << i;
  }
  EXPECT_NE(par.at({"x", 0}).tokens, par.at({"x", 1}).tokens);
}

char letter(int32_t token) { return static_cast<char>('a' + token % 26); }

class LetterDetokenizer : public IncrementalDetokenizer {
 public:
  std::string add(int32_t token) override { return std::string(1, letter(token)); }
  std::string finish() override { return {}; }
};
class LetterFactory : public DetokenizerFactory {
 public:
  std::unique_ptr<IncrementalDetokenizer> create(std::span<const int32_t>, bool) override {
    return std::make_unique<LetterDetokenizer>();
  }
};

// Holds each token's letter back until the next token arrives (as a partial
// UTF-8 character waits for its continuation); finish() releases the last one
// in upper case, so the test sees that it came from finish(). Records the
// skip_special_tokens flag each request asked for.
class HoldingDetokenizer : public IncrementalDetokenizer {
 public:
  std::string add(int32_t token) override {
    EXPECT_FALSE(finished_) << "add() after finish()";
    std::string out = held_ ? std::string(1, *held_) : std::string();
    held_ = letter(token);
    return out;
  }
  std::string finish() override {
    EXPECT_FALSE(finished_) << "finish() twice";
    finished_ = true;
    return held_ ? std::string(1, static_cast<char>(*held_ - 'a' + 'A')) : std::string();
  }

 private:
  std::optional<char> held_;
  bool finished_ = false;
};
class HoldingFactory : public DetokenizerFactory {
 public:
  explicit HoldingFactory(std::vector<bool>* skips) : skips_(skips) {}
  std::unique_ptr<IncrementalDetokenizer> create(std::span<const int32_t>, bool skip) override {
    skips_->push_back(skip);
    return std::make_unique<HoldingDetokenizer>();
  }

 private:
  std::vector<bool>* skips_;
};

// The text the holding detokenizer gives for `tokens` fed whole, then finish().
std::string held_text(const std::vector<int32_t>& tokens) {
  std::string s;
  for (int32_t t : tokens) s += letter(t);
  if (!s.empty()) s.back() = static_cast<char>(s.back() - 'a' + 'A');
  return s;
}

TEST(LlmEngine, FinishFlushesWhatTheDetokenizerHeldBack) {
  std::mt19937 rng(11);
  std::vector<bool> skips;
  std::vector<Spec> specs;
  for (int i = 0; i < 6; ++i) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = 1 + i * 3;
    p.ignore_eos = true;
    p.skip_special_tokens = i % 2 == 0;
    specs.push_back({str_cat("r", i), random_prompt(rng, 3 + i), p});
  }
  const Results r = run(engine_config(200), specs, nullptr, nullptr,
                        std::make_unique<HoldingFactory>(&skips));
  ASSERT_EQ(skips.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(skips[i], specs[i].params.skip_special_tokens) << i;
    const Result& got = r.at({specs[i].id, 0});
    ASSERT_EQ(got.tokens.size(), size_t(specs[i].params.max_tokens));
    EXPECT_EQ(got.text, held_text(got.tokens)) << specs[i].id;
  }
}

TEST(LlmEngine, TheStopTokenIsLeftOutOfTheTextUnlessIncluded) {
  std::mt19937 rng(5);
  const std::vector<int32_t> prompt = random_prompt(rng, 7);
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 12;
  p.ignore_eos = true;
  const Results free_run = run(engine_config(200), {{"f", prompt, p}}, nullptr, nullptr,
                               std::make_unique<LetterFactory>());
  const std::vector<int32_t> tokens = free_run.at({"f", 0}).tokens;
  ASSERT_EQ(tokens.size(), 12u);
  // Stop on the 5th output token (the first output equal to it is where it stops).
  const int32_t stop = tokens[4];
  const size_t at = size_t(std::find(tokens.begin(), tokens.end(), stop) - tokens.begin());
  std::string letters;
  for (size_t i = 0; i <= at; ++i) letters += letter(tokens[i]);
  for (bool include : {false, true}) {
    SamplingParams q = p;
    q.stop_token_ids = {stop};
    q.include_stop_str_in_output = include;
    const Results r = run(engine_config(200), {{"s", prompt, q}}, nullptr, nullptr,
                          std::make_unique<LetterFactory>());
    const Result& got = r.at({"s", 0});
    EXPECT_EQ(got.reason, FinishReason::kStop);
    EXPECT_EQ(got.tokens.size(), at + 1);
    EXPECT_EQ(got.text, include ? letters : letters.substr(0, at)) << include;
  }
}

TEST(LlmEngine, StopStringEndsTheRequestAndTruncatesItsText) {
  std::mt19937 rng(7);
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 20;
  p.ignore_eos = true;
  const Spec s{"s", random_prompt(rng, 9), p};
  const Results free_run = run(engine_config(200), {s}, nullptr, nullptr, std::make_unique<LetterFactory>());
  const std::string text = free_run.at({"s", 0}).text;
  ASSERT_EQ(text.size(), 20u);
  // A stop string spanning outputs 6 and 7; the output must end right before it.
  Spec stopped = s;
  stopped.params.stop = {text.substr(6, 2)};
  const size_t first = text.find(stopped.params.stop[0]);
  const Results r = run(engine_config(200), {stopped}, nullptr, nullptr, std::make_unique<LetterFactory>());
  const Result& got = r.at({"s", 0});
  EXPECT_EQ(got.reason, FinishReason::kStop);
  EXPECT_EQ(got.text, text.substr(0, first));
  EXPECT_EQ(got.tokens.size(), first + 2);
  EXPECT_THROW(
      {
        LlmEngine e(engine_config(200), std::make_unique<FakeModel>(kVocab, 200, kBlockSize));
        e.add_request("t", {1, 2}, stopped.params);
      },
      Error);
}

TEST(LlmEngine, BadRequestsAreRefusedByName) {
  LlmEngine e(engine_config(200), std::make_unique<FakeModel>(kVocab, 200, kBlockSize));
  SamplingParams p;
  p.top_p = 2.0f;
  try {
    e.add_request("bad-1", {1, 2}, p);
    FAIL();
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("bad-1"), std::string::npos);
    EXPECT_NE(std::string(err.what()).find("top_p"), std::string::npos);
  }
  EXPECT_THROW(e.add_request("bad-2", {1, 999}, SamplingParams{}), Error);
  e.add_request("ok", {1, 2}, SamplingParams{});
  EXPECT_THROW(e.add_request("ok", {1, 2}, SamplingParams{}), Error);
  EXPECT_FALSE(e.abort("bad-1"));
}

}  // namespace
}  // namespace vtllm::engine
