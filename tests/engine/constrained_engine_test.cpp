// Constrained decoding through LlmEngine on the tiny Qwen3.5 fixture (ModelRunner on
// the CPU): toy TokenConstraints (every k-th id, a fixed sequence then terminate, a
// rejection, an empty mask, a throwing mask) hold on every output token, end requests
// as their contract says, run on the mask worker thread, and leave unconstrained rows
// of the same batch token-equal to a run without the constrained ones; a constraint
// gated by start_after_token starts after its token; jump-forward appends forced runs
// as sampling would. Also allowed_token_ids and bad_words end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "engine/llm_engine.h"
#include "engine/model_runner.h"
#include "engine/token_constraint.h"
#include "text/tokenizer.h"
#include "vt/ops/sampling.h"

namespace vtllm::engine {
namespace {

constexpr int64_t kVocab = 512;

// Checks the calling contract: fill_bitmask off the engine thread, no overlapping calls.
class Checked : public TokenConstraint {
 public:
  void fill_bitmask(std::span<uint32_t> words) final {
    enter();
    EXPECT_EQ(int64_t(words.size()), vt::mask_words(kVocab));
    EXPECT_NE(std::this_thread::get_id(), engine_thread_) << "fill_bitmask on the engine thread";
    std::fill(words.begin(), words.end(), 0u);
    fill(words);
    busy_ = false;
  }
  bool accept(int32_t token) final {
    enter();
    const bool ok = take(token);
    busy_ = false;
    return ok;
  }

 protected:
  static void allow(std::span<uint32_t> words, int32_t t) {
    words[size_t(t) / 32] |= 1u << (t % 32);
  }
  virtual void fill(std::span<uint32_t> words) = 0;
  virtual bool take(int32_t token) = 0;

 private:
  void enter() { EXPECT_FALSE(busy_.exchange(true)) << "two calls at once"; }
  std::atomic<bool> busy_{false};
  std::thread::id engine_thread_ = std::this_thread::get_id();  // made on the engine thread
};

// Only ids t with t % k == r.
class EveryKth final : public Checked {
 public:
  EveryKth(int k, int r) : k_(k), r_(r) {}
  bool terminated() const override { return false; }

 private:
  void fill(std::span<uint32_t> w) override {
    for (int32_t t = r_; t < kVocab; t += k_) allow(w, t);
  }
  bool take(int32_t t) override { return t % k_ == r_; }
  int k_, r_;
};

// Exactly `seq`, then terminated.
class Sequence final : public Checked {
 public:
  explicit Sequence(std::vector<int32_t> seq) : seq_(std::move(seq)) {}
  bool terminated() const override { return pos_ == seq_.size(); }

 private:
  void fill(std::span<uint32_t> w) override { allow(w, seq_.at(pos_)); }
  bool take(int32_t t) override { return t == seq_.at(pos_++); }
  std::vector<int32_t> seq_;
  size_t pos_ = 0;
};

// A script of positions, each free (-1: any token) or one forced token, then
// terminated; forced_tokens reports the run of forced positions ahead.
class Script final : public Checked {
 public:
  explicit Script(std::vector<int32_t> script) : script_(std::move(script)) {}
  bool terminated() const override { return pos_ == script_.size(); }
  std::vector<int32_t> forced_tokens(size_t max) const override {
    std::vector<int32_t> run;
    for (size_t i = pos_; i < script_.size() && script_[i] >= 0 && run.size() < max; ++i)
      run.push_back(script_[i]);
    return run;
  }

 private:
  void fill(std::span<uint32_t> w) override {
    const int32_t t = script_.at(pos_);
    if (t >= 0) return allow(w, t);
    for (int32_t u = 0; u < kVocab; ++u) allow(w, u);
  }
  bool take(int32_t t) override {
    const int32_t want = script_.at(pos_++);
    return want < 0 || t == want;
  }
  std::vector<int32_t> script_;
  size_t pos_ = 0;
};

// Allows everything; misbehaves at token number `at` (0-based) as `how` says.
class Faulty final : public Checked {
 public:
  enum How { kReject, kEmptyMask, kThrow };
  Faulty(How how, int at) : how_(how), at_(at) {}
  bool terminated() const override { return false; }

 private:
  void fill(std::span<uint32_t> w) override {
    if (n_ == at_ && how_ == kThrow) VT_THROW("toy constraint gave up");
    if (n_ == at_ && how_ == kEmptyMask) return;
    for (int32_t t = 0; t < kVocab; ++t) allow(w, t);
  }
  bool take(int32_t) override { return !(n_++ == at_ && how_ == kReject); }
  How how_;
  int at_, n_ = 0;
};

struct Outcome {
  std::vector<int32_t> tokens;
  FinishReason reason = FinishReason::kNone;
  std::string error;
  int finals = 0;
};

struct Req {
  std::string id;
  std::vector<int32_t> prompt;
  SamplingParams params;
};

struct RunResult {
  std::map<std::pair<std::string, int>, Outcome> out;
  MaskStats masks;
  int steps = 0;              // engine.step() calls until every request finished
  int64_t forced_tokens = 0;  // LlmEngine::forced_tokens
};

RunResult run(const std::vector<Req>& reqs, bool jump_forward = false) {
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/qwen3_5-tiny-r2";
  EngineConfig cfg;
  cfg.scheduler.max_num_batched_tokens = 64;
  cfg.scheduler.max_num_seqs = 16;
  cfg.scheduler.max_model_len = 64;
  cfg.kv_cache.block_size = 4;
  cfg.kv_cache.num_blocks = 400;
  cfg.kv_cache.num_state_slots = 16;
  cfg.sampler.seed = 9;
  cfg.jump_forward = jump_forward;
  auto runner = ModelRunner::load(dir, cfg.kv_cache);
  EXPECT_EQ(runner->vocab_size(), kVocab);
  if (!needs_state_slots(runner->model())) cfg.kv_cache.num_state_slots = 0;
  LlmEngine engine(cfg, std::move(runner));
  for (const Req& r : reqs) engine.add_request(r.id, r.prompt, r.params);
  RunResult res;
  for (int guard = 0; engine.has_unfinished(); ++guard) {
    EXPECT_LT(guard, 1000) << "the engine does not finish";
    if (guard >= 1000) break;
    ++res.steps;
    for (const EngineOutput& o : engine.step()) {
      Outcome& c = res.out[{o.request_id, o.index}];
      c.tokens.insert(c.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      if (o.finished) {
        c.reason = o.finish_reason;
        c.error = o.error;
        ++c.finals;
      }
    }
  }
  const SchedulerStats st = engine.stats();
  EXPECT_EQ(st.kv.num_free_blocks, st.kv.num_blocks);
  EXPECT_EQ(st.kv.num_free_state_slots, st.kv.num_state_slots);
  res.masks = engine.mask_stats();
  res.forced_tokens = engine.forced_tokens();
  return res;
}

SamplingParams params(float temperature, int64_t max_tokens, std::optional<uint64_t> seed = {}) {
  SamplingParams p;
  p.temperature = temperature;
  p.max_tokens = max_tokens;
  p.seed = seed;
  p.ignore_eos = true;
  return p;
}

std::vector<int32_t> prompt(int i) {
  std::vector<int32_t> p;
  for (int t = 0; t < 4 + 3 * i; ++t) p.push_back(int32_t((37 * i + 11 * t + 5) % 500));
  return p;
}

TEST(ConstrainedEngine, MaskedRowsObeyAndOthersAreUnchanged) {
  // Unconstrained: greedy and seeded (their tokens do not depend on the batch).
  std::vector<Req> free_reqs = {{"g", prompt(0), params(0.0f, 20)},
                                {"s", prompt(1), params(0.9f, 20, 71)}};
  std::vector<Req> mixed = free_reqs;
  for (int i = 0; i < 4; ++i) {
    SamplingParams p =
        params(i % 2 ? 0.8f : 0.0f, 20, i % 2 ? std::optional<uint64_t>(50 + i) : std::nullopt);
    const int k = 2 + i % 2, r = i / 2;
    p.constraint = [k, r](std::span<const int32_t>) { return std::make_shared<EveryKth>(k, r); };
    mixed.push_back({"c" + std::to_string(i), prompt(2 + i), p});
  }
  // The greedy every-2nd row by another path: allowed_token_ids (a token_mask row).
  SamplingParams even = params(0.0f, 20);
  even.allowed_token_ids.emplace();
  for (int32_t t = 0; t < kVocab; t += 2) even.allowed_token_ids->push_back(t);
  mixed.push_back({"even", prompt(2), even});

  const RunResult alone = run(free_reqs), both = run(mixed);
  for (const char* id : {"g", "s"}) {
    EXPECT_EQ(both.out.at({id, 0}).tokens, alone.out.at({id, 0}).tokens) << id;
    EXPECT_EQ(both.out.at({id, 0}).tokens.size(), 20u) << id;
  }
  for (int i = 0; i < 4; ++i) {
    const Outcome& c = both.out.at({"c" + std::to_string(i), 0});
    EXPECT_EQ(c.tokens.size(), 20u) << i;
    EXPECT_EQ(c.reason, FinishReason::kLength) << i;
    for (int32_t t : c.tokens)
      EXPECT_EQ(t % (2 + i % 2), i / 2) << "request c" << i << " token " << t;
  }
  EXPECT_EQ(both.out.at({"c0", 0}).tokens, both.out.at({"even", 0}).tokens);
  EXPECT_EQ(both.masks.rows, 4 * 20);
  EXPECT_EQ(alone.masks.rows, 0);
  std::printf(
      "bench: constraint masks (vocab %lld, 4 constrained rows): %lld masks over %lld "
      "steps, fill %.1f us/mask on the worker, engine thread waited %.1f us/step\n",
      (long long)kVocab, (long long)both.masks.rows, (long long)both.masks.steps,
      1e6 * both.masks.fill_seconds / double(both.masks.rows),
      1e6 * both.masks.wait_seconds / double(both.masks.steps));
}

TEST(ConstrainedEngine, SequenceThenTerminateEndsWithStop) {
  const std::vector<int32_t> seq = {5, 17, 300, 2, 511};
  std::vector<Req> reqs;
  for (float temp : {0.0f, 1.0f}) {
    SamplingParams p = params(temp, 30);
    p.constraint = [seq](std::span<const int32_t>) { return std::make_shared<Sequence>(seq); };
    p.n = 2;
    reqs.push_back({temp == 0 ? "greedy" : "sampled", prompt(3), p});
  }
  const RunResult r = run(reqs);
  for (const char* id : {"greedy", "sampled"})
    for (int i = 0; i < 2; ++i) {  // each sample its own constraint, from the start
      const Outcome& o = r.out.at({id, i});
      EXPECT_EQ(o.tokens, seq) << id << " " << i;
      EXPECT_EQ(o.reason, FinishReason::kStop) << id << " " << i;
      EXPECT_EQ(o.finals, 1) << id << " " << i;
    }
}

TEST(ConstrainedEngine, JumpForwardAppendsForcedRunsAsSamplingWould) {
  // Free positions (-1) between forced runs, one run at the start, and a run that
  // max_tokens cuts (the "cut" request stops at its 12th token, inside a run).
  const std::vector<int32_t> script = {-1, 17, 300, 2,  -1, -1, 9,  9,  9,
                                       9,  -1, 40,  41, 42, 43, 44, -1, 7};
  const std::vector<int32_t> lead = {3, 4, 5, -1, 6, -1, -1, 8};
  auto with = [](std::vector<int32_t> sc, float temp, int64_t max, std::optional<uint64_t> seed) {
    SamplingParams p = params(temp, max, seed);
    p.constraint = [sc](std::span<const int32_t>) { return std::make_shared<Script>(sc); };
    return p;
  };
  const std::vector<Req> reqs = {{"greedy", prompt(1), with(script, 0.0f, 30, {})},
                                 {"lead", prompt(2), with(lead, 0.0f, 30, {})},
                                 {"cut", prompt(3), with(script, 0.0f, 12, {})},
                                 {"seeded", prompt(4), with(script, 0.9f, 30, 11)},
                                 {"free", prompt(0), params(0.0f, 5)}};
  const RunResult off = run(reqs), on = run(reqs, true);
  // Greedy: the same tokens and ends either way; the forced runs cost no steps of their own.
  for (const char* id : {"greedy", "lead", "cut", "free"}) {
    EXPECT_EQ(on.out.at({id, 0}).tokens, off.out.at({id, 0}).tokens) << id;
    EXPECT_EQ(on.out.at({id, 0}).reason, off.out.at({id, 0}).reason) << id;
    EXPECT_EQ(on.out.at({id, 0}).finals, 1) << id;
  }
  EXPECT_EQ(on.out.at({"greedy", 0}).reason, FinishReason::kStop);
  EXPECT_EQ(on.out.at({"greedy", 0}).tokens.size(), script.size());
  EXPECT_EQ(on.out.at({"cut", 0}).reason, FinishReason::kLength);
  EXPECT_EQ(on.out.at({"cut", 0}).tokens.size(), 12u);
  // Seeded sampling draws no numbers for forced tokens: the script still holds.
  const Outcome& seeded = on.out.at({"seeded", 0});
  ASSERT_EQ(seeded.tokens.size(), script.size());
  for (size_t i = 0; i < script.size(); ++i)
    if (script[i] >= 0) {
      EXPECT_EQ(seeded.tokens[i], script[i]) << "position " << i;
    }
  EXPECT_EQ(off.forced_tokens, 0);
  EXPECT_GT(on.forced_tokens, 20);
  EXPECT_LT(on.steps, off.steps);
  std::printf("bench: jump-forward: %d steps against %d, %lld tokens forced\n", on.steps, off.steps,
              (long long)on.forced_tokens);
}

TEST(ConstrainedEngine, FaultsEndTheRequestWithAnError) {
  std::vector<Req> reqs = {{"free", prompt(0), params(0.0f, 12)}};
  const struct {
    const char* id;
    Faulty::How how;
    size_t tokens;  // in the output
    const char* error;
  } cases[] = {{"reject", Faulty::kReject, 4, "rejected token"},
               {"empty", Faulty::kEmptyMask, 3, "allows no token"},
               {"throw", Faulty::kThrow, 3, "toy constraint gave up"}};
  for (const auto& c : cases) {
    SamplingParams p = params(0.7f, 12, 3);
    p.constraint = [how = c.how](std::span<const int32_t>) {
      return std::make_shared<Faulty>(how, 3);
    };
    reqs.push_back({c.id, prompt(1), p});
  }
  const RunResult r = run(reqs);
  EXPECT_EQ(r.out.at({"free", 0}).tokens.size(), 12u);
  EXPECT_EQ(r.out.at({"free", 0}).reason, FinishReason::kLength);
  for (const auto& c : cases) {
    const Outcome& o = r.out.at({c.id, 0});
    EXPECT_EQ(o.tokens.size(), c.tokens) << c.id;
    EXPECT_EQ(o.reason, FinishReason::kError) << c.id;
    EXPECT_NE(o.error.find(c.error), std::string::npos) << c.id << ": " << o.error;
    EXPECT_EQ(o.finals, 1) << c.id;
  }
}

// start_after_token: the inner constraint starts after the gate's token. Greedy tokens do
// not depend on the batch, so a gated row follows the free run up to the first time it
// samples the gate token, then the inner sequence; a gate token that never comes leaves
// the output equal to the free run (and the inner constraint, which would throw, unused);
// a gate token forced first by logit_bias is followed by the inner sequence at once (the
// bias keeps pushing it, the inner mask keeps it out).
TEST(ConstrainedEngine, GatedConstraintStartsAfterItsToken) {
  const std::vector<int32_t> seq = {5, 17, 300, 2, 511};
  const RunResult free_run = run({{"g", prompt(6), params(0.0f, 20)}});
  const std::vector<int32_t>& f = free_run.out.at({"g", 0}).tokens;
  ASSERT_EQ(f.size(), 20u);
  const int32_t gate = f[5];
  const size_t opens = size_t(std::find(f.begin(), f.end(), gate) - f.begin());
  int32_t absent = 0;
  while (std::find(f.begin(), f.end(), absent) != f.end()) ++absent;
  int32_t forced = 1;
  while (std::find(seq.begin(), seq.end(), forced) != seq.end() || forced == f[0]) ++forced;

  SamplingParams gated = params(0.0f, 30);
  gated.constraint = start_after_token(
      [seq](std::span<const int32_t>) { return std::make_shared<Sequence>(seq); }, gate);
  SamplingParams never = params(0.0f, 20);
  never.constraint = start_after_token(
      [](std::span<const int32_t>) { return std::make_shared<Faulty>(Faulty::kThrow, 0); }, absent);
  SamplingParams biased = params(0.0f, 30);
  biased.logit_bias = {{forced, 100.0f}};
  biased.constraint = start_after_token(
      [seq](std::span<const int32_t>) { return std::make_shared<Sequence>(seq); }, forced);
  const RunResult r = run(
      {{"gated", prompt(6), gated}, {"never", prompt(6), never}, {"biased", prompt(7), biased}});

  std::vector<int32_t> want(f.begin(), f.begin() + ptrdiff_t(opens) + 1);
  want.insert(want.end(), seq.begin(), seq.end());
  EXPECT_EQ(r.out.at({"gated", 0}).tokens, want);
  EXPECT_EQ(r.out.at({"gated", 0}).reason, FinishReason::kStop);
  EXPECT_EQ(r.out.at({"never", 0}).tokens, f);
  EXPECT_EQ(r.out.at({"never", 0}).reason, FinishReason::kLength);
  EXPECT_EQ(r.out.at({"never", 0}).error, "");
  want = {forced};
  want.insert(want.end(), seq.begin(), seq.end());
  EXPECT_EQ(r.out.at({"biased", 0}).tokens, want);
  EXPECT_EQ(r.out.at({"biased", 0}).reason, FinishReason::kStop);
}

TEST(ConstrainedEngine, AFailingFactoryRefusesTheRequest) {
  EngineConfig cfg;
  SamplingParams p;
  p.constraint = [](std::span<const int32_t>) -> std::shared_ptr<TokenConstraint> {
    VT_THROW("bad schema");
  };
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/qwen3_5-tiny-r2";
  cfg.kv_cache.block_size = 4;
  cfg.kv_cache.num_blocks = 64;
  cfg.kv_cache.num_state_slots = 4;
  cfg.scheduler.max_model_len = 64;
  LlmEngine engine(cfg, ModelRunner::load(dir, cfg.kv_cache));
  try {
    engine.add_request("x", prompt(0), p);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad schema"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(engine.has_unfinished());
}

TEST(ConstrainedEngine, AllowedTokenIdsAndBadWords) {
  SamplingParams allowed = params(1.0f, 24, 5);
  allowed.allowed_token_ids = std::vector<int32_t>{7, 8, 9, 100, 200};
  const SamplingParams greedy = params(0.0f, 8);
  const RunResult base = run({{"allowed", prompt(4), allowed}, {"g", prompt(5), greedy}});
  for (int32_t t : base.out.at({"allowed", 0}).tokens)
    EXPECT_TRUE(t == 7 || t == 8 || t == 9 || t == 100 || t == 200) << t;
  const std::vector<int32_t>& g = base.out.at({"g", 0}).tokens;
  ASSERT_EQ(g.size(), 8u);

  SamplingParams one = greedy, two = greedy;
  one.bad_words_token_ids = {{g[0]}};        // always banned
  two.bad_words_token_ids = {{g[0], g[1]}};  // g[1] banned right after g[0]
  const RunResult banned = run({{"one", prompt(5), one}, {"two", prompt(5), two}});
  for (int32_t t : banned.out.at({"one", 0}).tokens) EXPECT_NE(t, g[0]);
  const std::vector<int32_t>& t2 = banned.out.at({"two", 0}).tokens;
  ASSERT_EQ(t2.size(), 8u);
  EXPECT_EQ(t2[0], g[0]);
  EXPECT_NE(t2[1], g[1]);
  for (size_t i = 1; i < t2.size(); ++i) EXPECT_FALSE(t2[i - 1] == g[0] && t2[i] == g[1]) << i;
}

// bad_words as strings: each word left-stripped and encoded as is and with a leading
// space (vLLM's update_from_tokenizer), checked by decoding the ids back; through
// LlmEngine on the bundled model the banned word's token never comes.
TEST(ConstrainedEngine, BadWordStringsAreTokenizedAsVllm) {
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/models/tiny-qwen3.5";
  const text::Tokenizer tok = text::Tokenizer::from_file(dir + "/tokenizer.json");
  SamplingParams p = params(0.0f, 12);
  p.bad_words = {"hello", "  world peace"};
  const SamplingParams r = resolve_bad_words(p, &tok);
  std::vector<std::string> decoded;
  for (const auto& ids : r.bad_words_token_ids) decoded.push_back(tok.decode(ids, false));
  ASSERT_GE(decoded.size(), 2u);
  EXPECT_EQ(decoded[0], "hello");
  size_t i = 1;
  if (decoded[i] == " hello") ++i;  // kept when its first token differs, length equal
  ASSERT_LT(i, decoded.size());
  EXPECT_EQ(decoded[i], "world peace");
  EXPECT_LE(decoded.size(), i + 2);
  if (decoded.size() == i + 2) {
    EXPECT_EQ(decoded[i + 1], " world peace");
  }
  EXPECT_THROW(resolve_bad_words(p, nullptr), Error);
  SamplingParams given = p;
  given.bad_words_token_ids = {{7}};  // ids given: kept as they are
  EXPECT_EQ(resolve_bad_words(given, nullptr).bad_words_token_ids, given.bad_words_token_ids);

  EngineConfig cfg;
  cfg.scheduler.max_num_batched_tokens = 64;
  cfg.scheduler.max_model_len = 64;
  cfg.kv_cache.block_size = 4;
  cfg.kv_cache.num_blocks = 64;
  cfg.kv_cache.num_state_slots = 4;
  const auto first_tokens = [&](const SamplingParams& sp) {
    LlmEngine engine(cfg, ModelRunner::load(dir, cfg.kv_cache), &tok);
    engine.add_request("x", tok.encode("The weather today is", false), sp);
    std::vector<int32_t> out;
    while (engine.has_unfinished())
      for (const EngineOutput& o : engine.step())
        out.insert(out.end(), o.new_token_ids.begin(), o.new_token_ids.end());
    return out;
  };
  const std::vector<int32_t> free_run = first_tokens(params(0.0f, 6));
  ASSERT_FALSE(free_run.empty());
  // A word whose one-token form (plain or spaced) the free run produced.
  SamplingParams banned = params(0.0f, 6);
  std::vector<int32_t> hit;  // the one-token entries that occur in free_run
  for (int32_t t : free_run) {
    banned.bad_words = {tok.decode(std::vector<int32_t>{t}, false)};
    hit.clear();
    for (const auto& ids : resolve_bad_words(banned, &tok).bad_words_token_ids)
      if (ids.size() == 1 && std::count(free_run.begin(), free_run.end(), ids[0]))
        hit.push_back(ids[0]);
    if (!hit.empty()) break;
  }
  ASSERT_FALSE(hit.empty()) << "no output token is a one-token word";
  const std::vector<int32_t> run2 = first_tokens(banned);
  ASSERT_EQ(run2.size(), 6u);
  for (int32_t t : run2)
    for (int32_t h : hit) EXPECT_NE(t, h) << "'" << banned.bad_words[0] << "'";
}

}  // namespace
}  // namespace vtllm::engine
