#include "engine/llm_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string_view>

#include "base/error.h"
#include "fake_model.h"
#include "text/tokenizer.h"

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
            const text::Tokenizer* tokenizer = nullptr) {
  auto model = std::make_unique<FakeModel>(
      kVocab, config.kv_cache.num_blocks, kBlockSize,
      config.kv_cache.num_state_slots + config.kv_cache.num_state_snapshots);
  const FakeModel* model_view = model.get();
  LlmEngine engine(config, std::move(model), tokenizer);
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

// A byte-level tokenizer over the fake model's 64 ids: 0 "<eos>" and 63 "<sp>"
// are special; 1-52 are letters, 53-58 digits, 59-62 the single bytes 0xC3,
// 0xA9, 0xBC, 0xB1 (0xC3 0xA9 is "é"), so outputs hold characters split
// across tokens and unfinished ones.
const text::Tokenizer& test_tokenizer() {
  static const text::Tokenizer tok = [] {
    nlohmann::json vocab = nlohmann::json::object();
    int32_t id = 1;
    for (char c = 'a'; c <= 'z'; ++c) vocab[std::string(1, c)] = id++;
    for (char c = 'A'; c <= 'Z'; ++c) vocab[std::string(1, c)] = id++;
    for (char c = '0'; c <= '5'; ++c) vocab[std::string(1, c)] = id++;
    // ByteLevel spells these bytes as the code point of the same value.
    for (unsigned b : {0xC3u, 0xA9u, 0xBCu, 0xB1u})
      vocab[std::string{char(0xC0 | (b >> 6)), char(0x80 | (b & 0x3F))}] = id++;
    const nlohmann::json j = {
        {"added_tokens",
         {{{"id", 0}, {"content", "<eos>"}, {"special", true}},
          {{"id", kVocab - 1}, {"content", "<sp>"}, {"special", true}}}},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
    return text::Tokenizer::from_json(j.dump(), "test tokenizer");
  }();
  return tok;
}

// The first n output tokens decoded at once: the reference for the streamed text.
std::string decoded(const std::vector<int32_t>& tokens, size_t n, bool skip_special) {
  return test_tokenizer().decode(std::span(tokens).first(n), skip_special);
}

bool is_letter(int32_t token) { return token >= 1 && token <= 52; }

// Letters and digits only: the prompt's decoding window ends on a whole character.
std::vector<int32_t> ascii_prompt(std::mt19937& rng, int n) {
  std::vector<int32_t> p(n);
  for (auto& t : p) t = 1 + static_cast<int32_t>(rng() % 58);
  return p;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

TEST(LlmEngine, StreamedTextEqualsTheOneShotDecode) {
  // Held-back partial characters, the flush at the end and each request's
  // skip_special_tokens all show in the concatenated text.
  std::mt19937 rng(11);
  std::vector<Spec> specs;
  for (int i = 0; i < 64; ++i) {
    SamplingParams p;
    p.temperature = i % 3 == 0 ? 0.0f : 1.0f;
    p.seed = 1000 + i;
    p.max_tokens = 1 + i % 24;
    p.ignore_eos = i % 4 != 3;
    p.skip_special_tokens = i % 2 == 0;
    specs.push_back({str_cat("r", i), ascii_prompt(rng, 3 + i % 7), p});
  }
  const Results r = run(engine_config(800, 256, 64), specs, nullptr, nullptr, &test_tokenizer());
  int specials_shown = 0, specials_skipped = 0, unfinished_at_end = 0;
  for (const Spec& s : specs) {
    const Result& got = r.at({s.id, 0});
    size_t n = got.tokens.size();
    if (got.reason == FinishReason::kStop) --n;  // the eos that ended it is not text
    const bool skip = s.params.skip_special_tokens;
    EXPECT_EQ(got.text, decoded(got.tokens, n, skip)) << s.id;
    const bool special = std::any_of(got.tokens.begin(), got.tokens.begin() + n,
                                     [&](int32_t t) { return test_tokenizer().is_special(t); });
    (skip ? specials_skipped : specials_shown) += special;
    unfinished_at_end += got.text.ends_with(kReplacement);
  }
  // Each behaviour was exercised, so a wrong flag or a missing flush fails above.
  EXPECT_GT(specials_shown, 0);
  EXPECT_GT(specials_skipped, 0);
  EXPECT_GT(unfinished_at_end, 0);
}

TEST(LlmEngine, TheStopTokenIsLeftOutOfTheTextUnlessIncluded) {
  std::mt19937 rng(5);
  const std::vector<int32_t> prompt = ascii_prompt(rng, 7);
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 12;
  p.ignore_eos = true;
  p.skip_special_tokens = false;  // a special stop token shows when included
  const Results free_run =
      run(engine_config(200), {{"f", prompt, p}}, nullptr, nullptr, &test_tokenizer());
  const std::vector<int32_t> tokens = free_run.at({"f", 0}).tokens;
  ASSERT_EQ(tokens.size(), 12u);
  // Stop on the 5th output token (the first output equal to it is where it stops).
  const int32_t stop = tokens[4];
  const size_t at = size_t(std::find(tokens.begin(), tokens.end(), stop) - tokens.begin());
  for (bool include : {false, true}) {
    SamplingParams q = p;
    q.stop_token_ids = {stop};
    q.include_stop_str_in_output = include;
    const Results r =
        run(engine_config(200), {{"s", prompt, q}}, nullptr, nullptr, &test_tokenizer());
    const Result& got = r.at({"s", 0});
    EXPECT_EQ(got.reason, FinishReason::kStop);
    EXPECT_EQ(got.tokens.size(), at + 1);
    EXPECT_EQ(got.text, decoded(tokens, include ? at + 1 : at, false)) << include;
  }
}

TEST(LlmEngine, StopStringEndsTheRequestAndTruncatesItsText) {
  std::mt19937 rng(7);
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 20;
  p.ignore_eos = true;
  const Spec s{"s", ascii_prompt(rng, 9), p};
  const Results free_run = run(engine_config(200), {s}, nullptr, nullptr, &test_tokenizer());
  const std::vector<int32_t>& tokens = free_run.at({"s", 0}).tokens;
  const std::string text = free_run.at({"s", 0}).text;
  ASSERT_EQ(tokens.size(), 20u);
  ASSERT_EQ(text, decoded(tokens, tokens.size(), true));
  // A stop string spanning two outputs (two letters: whole characters).
  size_t k = 4;
  while (k + 1 < tokens.size() && !(is_letter(tokens[k]) && is_letter(tokens[k + 1]))) ++k;
  ASSERT_LT(k + 1, tokens.size()) << "no two letters in a row to stop on";
  Spec stopped = s;
  stopped.params.stop = {test_tokenizer().decode(std::span(tokens).subspan(k, 2))};
  // The request ends at the first output whose text completes the stop, and
  // its text ends right before the stop.
  size_t steps = 1;
  while (decoded(tokens, steps, true).find(stopped.params.stop[0]) == std::string::npos) ++steps;
  const Results r = run(engine_config(200), {stopped}, nullptr, nullptr, &test_tokenizer());
  const Result& got = r.at({"s", 0});
  EXPECT_EQ(got.reason, FinishReason::kStop);
  EXPECT_EQ(got.text, text.substr(0, text.find(stopped.params.stop[0])));
  EXPECT_EQ(got.tokens.size(), steps);
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
