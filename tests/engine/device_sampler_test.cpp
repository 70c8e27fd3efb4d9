// The device sampling path (Sampler::device_batch + vt::sample + Sampler::results)
// against the host Sampler: the CPU arm on every parameter combination (same tokens,
// same logprobs), the engine stream advancing alike on both paths, and the CUDA arm
// at Qwen's vocabulary (CudaDeviceSampler, skipped without a GPU). Rows carry
// constraint masks, allowed_token_ids and bad_words at random; MasksFollowVllm checks
// their semantics (and what raw logprobs see) against a brute-force reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/llm_engine.h"
#include "engine/model_runner.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"
#include "io/config.h"
#include "models/registry.h"
#include "vt/device.h"
#include "vt/ops/copy.h"
#include "vt/ops/sampling.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vtllm::engine {
namespace {

// One row's request: params and the histories the penalties and min_tokens read.
struct Case {
  SamplingParams params;
  std::vector<int32_t> prompt, output, eos;
  std::vector<uint32_t> mask;  // a TokenConstraint's; empty: none
};

// Case number c enumerates temperature x top_k x top_p x min_p x penalties; the rest
// (bias, min_tokens, seed, logprobs) varies with rng.
Case make_case(int c, int vocab, std::mt19937& rng) {
  Case k;
  SamplingParams& p = k.params;
  const float temps[] = {0.0f, 0.7f, 1.3f};
  const int top_ks[] = {0, 1, 20, 1000};
  const float top_ps[] = {1.0f, 0.9f, 0.5f};
  p.temperature = temps[c % 3];
  p.top_k = top_ks[(c / 3) % 4];
  p.top_p = top_ps[(c / 12) % 3];
  p.min_p = (c / 36) % 2 ? 0.05f : 0.0f;
  if ((c / 72) % 2) {
    p.repetition_penalty = 1.3f;
    p.frequency_penalty = 0.4f;
    p.presence_penalty = -0.3f;
  }
  std::uniform_int_distribution<int32_t> tok(0, vocab - 1);
  for (int i = 0; i < 40; ++i) k.prompt.push_back(tok(rng));
  for (int i = 0; i < 25; ++i) k.output.push_back(i % 3 ? tok(rng) : k.prompt[size_t(i)]);
  k.eos = {tok(rng), tok(rng)};
  if (rng() % 2) p.stop_token_ids = {tok(rng)};
  p.min_tokens = rng() % 2 ? 30 : 0;
  p.ignore_eos = rng() % 4 == 0;
  for (int i = 0, n = int(rng() % 4); i < n; ++i) {
    const int32_t t = i == 2 ? p.logit_bias[0].first : tok(rng);  // a token biased twice
    p.logit_bias.push_back({t, float(int(rng() % 21) - 10) * 0.75f});
  }
  if (rng() % 2) p.seed = rng();
  const int lps[] = {-1, 0, 1, 5, 20};
  if (const int n = lps[rng() % 5]; n >= 0) p.logprobs = n;
  // Masks: ~5/8 of the vocabulary allowed by a constraint, ~300 allowed_token_ids.
  const int masks = int(rng() % 4);
  if (masks & 1) {
    k.mask.assign(size_t(vt::mask_words(vocab)), 0u);
    for (uint32_t& w : k.mask) w = uint32_t(rng()) | (uint32_t(rng()) & uint32_t(rng()));
  }
  if (masks & 2) {
    p.allowed_token_ids.emplace();
    for (int i = 0; i < 300; ++i) p.allowed_token_ids->push_back(tok(rng));
  }
  if (rng() % 2) {  // one word always banned, one banned after this output, one not
    p.bad_words_token_ids = {{tok(rng)},
                             {k.output[k.output.size() - 2], k.output.back(), tok(rng)},
                             {k.output.back() == 1 ? 2 : 1, tok(rng)}};
  }
  return k;
}

std::vector<SamplerRow> rows_of(const std::vector<Case>& cases) {
  std::vector<SamplerRow> rows;
  for (const Case& c : cases) {
    SamplerRow row{&c.params, c.prompt, c.output, c.eos};
    row.constraint_mask = c.mask;
    row.constrained = !c.mask.empty();
    rows.push_back(row);
  }
  return rows;
}

std::vector<float> random_logits(std::mt19937& rng, size_t n, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> x(n);
  for (float& v : x) v = d(rng);
  return x;
}

vt::Tensor tensor_of(const std::vector<float>& x, int64_t rows, int64_t vocab) {
  vt::Tensor t = vt::Tensor::empty({rows, vocab}, vt::DType::kF32);
  std::copy(x.begin(), x.end(), t.data<float>());
  return t;
}

// Logprobs within tol; -inf (a masked token in processed mode) only against -inf.
bool near(float a, float b, double tol) { return a == b || std::abs(double(a) - b) <= tol; }

// want: the host Sampler; got: the device path. Tokens equal, logprobs to `tol`.
void expect_same(const std::vector<SampleResult>& want, const std::vector<SampleResult>& got,
                 const std::vector<Case>& cases, double tol, const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t r = 0; r < want.size(); ++r) {
    const std::string at = what + " row " + std::to_string(r) + " case temp " +
                           std::to_string(cases[r].params.temperature) + " top_k " +
                           std::to_string(cases[r].params.top_k) + " top_p " +
                           std::to_string(cases[r].params.top_p);
    EXPECT_EQ(want[r].token, got[r].token) << at;
    if (!cases[r].params.logprobs) continue;
    EXPECT_PRED3(near, want[r].logprob, got[r].logprob, tol) << at;
    EXPECT_EQ(want[r].rank, got[r].rank) << at;
    ASSERT_EQ(want[r].top_logprobs.size(), got[r].top_logprobs.size()) << at;
    for (size_t i = 0; i < want[r].top_logprobs.size(); ++i) {
      EXPECT_EQ(want[r].top_logprobs[i].token, got[r].top_logprobs[i].token) << at << " top " << i;
      EXPECT_PRED3(near, want[r].top_logprobs[i].logprob, got[r].top_logprobs[i].logprob, tol)
          << at;
    }
  }
}

// Runs both paths on the same logits from two samplers of the same config.
void compare_paths(vt::Stream& s, const std::vector<float>& logits, int64_t vocab,
                   const std::vector<Case>& cases, const SamplerConfig& config, double tol,
                   const std::string& what) {
  const std::vector<SamplerRow> rows = rows_of(cases);
  Sampler host(config), device(config);
  const std::vector<SampleResult> want = host.sample(logits, vocab, rows);
  vt::Tensor t = tensor_of(logits, int64_t(rows.size()), vocab);
  if (s.device().is_cuda()) t = vt::to_device(s, t, s.device());
  const vt::SampleOutput out = vt::sample(s, t, device.device_batch(rows, vocab));
  expect_same(want, Sampler::results(out, rows), cases, tol, what);
}

TEST(DeviceSampler, CpuArmMatchesSamplerOnEveryCombination) {
  vt::Stream s(vt::Device::cpu());
  const int vocab = 3001;
  std::mt19937 rng(7);
  for (int batch = 0; batch < 6; ++batch) {
    std::vector<Case> cases;
    for (int c = 0; c < 48; ++c) cases.push_back(make_case(batch * 48 + c, vocab, rng));
    // Scale 3 spreads the mass (top_p keeps many tokens); a few planted ties at the top.
    std::vector<float> logits = random_logits(rng, cases.size() * vocab, 3.0f);
    for (size_t r = 0; r < cases.size(); ++r)
      for (int j = 0; j < 4; ++j) logits[r * vocab + size_t(rng() % vocab)] = 9.5f;
    for (LogprobsMode mode : {LogprobsMode::kRaw, LogprobsMode::kProcessed})
      compare_paths(s, logits, vocab, cases, {.seed = 11, .logprobs_mode = mode}, 1e-5,
                    "batch " + std::to_string(batch));
  }
}

TEST(DeviceSampler, CpuArmMatchesSamplerAtQwenVocab) {
  vt::Stream s(vt::Device::cpu());
  const int vocab = 151936;
  std::mt19937 rng(8);
  std::vector<Case> cases;
  for (int c = 0; c < 16; ++c) cases.push_back(make_case(c * 9 + 1, vocab, rng));
  const std::vector<float> logits = random_logits(rng, cases.size() * vocab, 2.0f);
  compare_paths(s, logits, vocab, cases, {.seed = 3}, 1e-5, "qwen vocab");
}

TEST(DeviceSampler, EngineStreamAdvancesAlikeOnBothPaths) {
  vt::Stream s(vt::Device::cpu());
  const int vocab = 500;
  std::mt19937 rng(9);
  std::vector<Case> cases;
  for (int c = 0; c < 12; ++c) cases.push_back(make_case(c, vocab, rng));
  const std::vector<SamplerRow> rows = rows_of(cases);
  Sampler host({.seed = 21}), device({.seed = 21});
  for (int step = 0; step < 5; ++step) {
    const std::vector<float> logits = random_logits(rng, cases.size() * vocab, 1.0f);
    const auto want = host.sample(logits, vocab, rows);
    const auto got = Sampler::results(
        vt::sample(s, tensor_of(logits, int64_t(rows.size()), vocab), device.device_batch(rows, vocab)),
        rows);
    for (size_t r = 0; r < rows.size(); ++r) EXPECT_EQ(want[r].token, got[r].token) << step;
  }
}

TEST(DeviceSampler, BatchListsEachTokenOnceWithBiasInOrder) {
  SamplingParams p;
  p.repetition_penalty = 1.1f;
  p.frequency_penalty = 0.5f;
  p.logit_bias = {{7, 1.0f}, {3, 2.0f}, {7, -0.5f}};
  p.min_tokens = 5;
  p.stop_token_ids = {3};
  const std::vector<int32_t> prompt = {7, 7, 9}, output = {9, 9, 4}, eos = {2};
  const std::vector<SamplerRow> rows = {{&p, prompt, output, eos}};
  Sampler sampler;
  const vt::SampleBatch b = sampler.device_batch(rows, 10);
  ASSERT_EQ(b.edit_start, (std::vector<int64_t>{0, 5}));
  auto find = [&](int32_t t) {
    for (const auto& e : b.edits)
      if (e.token == t) return e;
    ADD_FAILURE() << "token " << t << " not edited";
    return vt::SampleTokenEdit{};
  };
  EXPECT_TRUE(find(3).masked && find(2).masked);
  const vt::SampleTokenEdit seven = find(7);
  ASSERT_EQ(seven.bias_end - seven.bias_begin, 2);
  EXPECT_EQ(b.bias[size_t(seven.bias_begin)], 1.0f);
  EXPECT_EQ(b.bias[size_t(seven.bias_begin + 1)], -0.5f);
  EXPECT_TRUE(seven.in_prompt);
  EXPECT_EQ(find(9).output_count, 2);
  EXPECT_TRUE(find(9).in_prompt);
  EXPECT_EQ(find(4).output_count, 1);
  EXPECT_FALSE(find(4).in_prompt);
}

// The masks by their definitions on a small vocabulary, both paths: a constraint mask
// (odd ids), allowed_token_ids [1, 12], bad_words {3} and {9, 5} after an output ending
// in 9. Greedy takes the best survivor; raw logprobs see the constraint only (vLLM
// applies the grammar bitmask before its sampler, allowed_token_ids and bad_words in
// it), processed logprobs see everything.
TEST(DeviceSampler, MasksFollowVllm) {
  vt::Stream s(vt::Device::cpu());
  const int vocab = 40;
  std::mt19937 rng(12);
  for (int trial = 0; trial < 20; ++trial) {
    Case c;
    c.params.temperature = trial % 2 ? 0.0f : 0.7f;
    c.params.logprobs = 3;
    c.params.allowed_token_ids = std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    c.params.bad_words_token_ids = {{3}, {9, 5}, {4, 4, 7}};
    c.prompt = {20, 21};
    c.output = {4, 9};
    c.mask.assign(2, 0xAAAAAAAAu);  // odd ids
    const std::vector<float> logits = random_logits(rng, vocab, 2.0f);
    std::vector<float> constrained = logits, processed;
    for (int t = 0; t < vocab; ++t)
      if (t % 2 == 0) constrained[size_t(t)] = -INFINITY;
    processed = constrained;
    for (int t = 0; t < vocab; ++t)
      if (t < 1 || t > 12 || t == 3 || t == 5) processed[size_t(t)] = -INFINITY;
    const std::vector<Case> cases = {c};
    const std::vector<SamplerRow> rows = rows_of(cases);
    for (LogprobsMode mode : {LogprobsMode::kRaw, LogprobsMode::kProcessed}) {
      Sampler host({.seed = 4, .logprobs_mode = mode}), device({.seed = 4, .logprobs_mode = mode});
      const SampleResult want = host.sample(logits, vocab, rows)[0];
      const SampleResult got = Sampler::results(
          vt::sample(s, tensor_of(logits, 1, vocab), device.device_batch(rows, vocab)), rows)[0];
      const std::string at = "trial " + std::to_string(trial);
      EXPECT_TRUE(want.token == 1 || want.token == 7 || want.token == 9 || want.token == 11) << at;
      EXPECT_EQ(got.token, want.token) << at;
      if (c.params.greedy()) {
        const int32_t best =
            int32_t(std::max_element(processed.begin(), processed.end()) - processed.begin());
        EXPECT_EQ(want.token, best) << at;
      }
      // The reference's logprob of the token, in double over the row it should see.
      const std::vector<float>& seen = mode == LogprobsMode::kRaw ? constrained : processed;
      if (mode == LogprobsMode::kProcessed && !c.params.greedy()) continue;  // after temperature
      double z = 0;
      for (float v : seen) z += std::exp(double(v));
      const double lp = double(seen[size_t(want.token)]) - std::log(z);
      EXPECT_NEAR(want.logprob, lp, 1e-5) << at;
      EXPECT_NEAR(got.logprob, lp, 1e-5) << at;
    }
  }
}

TEST(CudaDeviceSampler, MatchesSamplerAtQwenVocab) {
  if (vt::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  vt::Stream s(vt::Device::cuda(0));
  const int vocab = 151936;
  std::mt19937 rng(10);
  for (int batch : {1, 8, 64}) {
    std::vector<Case> cases;
    for (int c = 0; c < batch; ++c) cases.push_back(make_case(c * 7 + batch, vocab, rng));
    const std::vector<float> logits = random_logits(rng, cases.size() * vocab, 2.0f);
    for (LogprobsMode mode : {LogprobsMode::kRaw, LogprobsMode::kProcessed})
      compare_paths(s, logits, vocab, cases, {.seed = 5, .logprobs_mode = mode}, 1e-4,
                    "batch " + std::to_string(batch));
  }
}

// A runner whose logits cross to the host and are sampled there (vt::sample's CPU arm).
class HostSampled final : public HostLogitsExecutor {
 public:
  explicit HostSampled(std::unique_ptr<ModelRunner> r) : runner_(std::move(r)) {}
  int64_t vocab_size() const override { return runner_->vocab_size(); }
  std::vector<float> logits(const StepPlan& b) override { return runner_->execute_logits(b); }

 private:
  std::unique_ptr<ModelRunner> runner_;
};

// A TokenConstraint allowing the ids t with t % 3 == 1.
class OneModThree final : public TokenConstraint {
 public:
  void fill_bitmask(std::span<uint32_t> words) override {
    std::fill(words.begin(), words.end(), 0u);
    for (size_t t = 1; t < words.size() * 32; t += 3) words[t / 32] |= 1u << (t % 32);
  }
  bool accept(int32_t token) override { return token % 3 == 1; }
  bool terminated() const override { return false; }
};

// The tiny Qwen3 fixture through LlmEngine on `dev` with seeded and unseeded sampled
// requests (penalties, top-k/top-p, logprobs, a constraint, allowed_token_ids,
// bad_words): every token and logprob of the run.
std::pair<std::map<std::string, std::vector<int32_t>>, std::vector<float>> run_engine(
    vt::Device dev, bool device_path) {
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/qwen3-tiny";
  models::LoadConfig load;
  load.device = dev;
  load.progress = io::LoadOptions::Progress::kNever;
  EngineConfig cfg;
  cfg.scheduler.max_num_batched_tokens = 256;
  cfg.scheduler.max_num_seqs = 8;
  cfg.scheduler.max_model_len = 128;
  cfg.kv_cache.block_size = 4;
  cfg.kv_cache.num_blocks = 400;
  cfg.sampler.seed = 77;
  auto runner = ModelRunner::load(models::load_model_config(dir), dir, cfg.kv_cache, load);
  std::unique_ptr<ModelExecutor> executor;
  if (device_path)
    executor = std::move(runner);
  else
    executor = std::make_unique<HostSampled>(std::move(runner));
  LlmEngine engine(cfg, std::move(executor));
  std::mt19937 rng(3);
  for (int i = 0; i < 6; ++i) {
    SamplingParams p;
    p.temperature = i == 0 ? 0.0f : 0.8f;
    p.top_p = 0.9f;
    p.top_k = i % 2 ? 40 : 0;
    p.repetition_penalty = i % 3 ? 1.2f : 1.0f;
    p.max_tokens = 16;
    if (i % 2) p.seed = 1000 + i;
    if (i == 3) p.logprobs = 3;
    // Masks through the engine: a constraint (ids = 1 mod 3, raw logprobs see it),
    // allowed_token_ids, bad_words.
    if (i == 3)
      p.constraint = [](std::span<const int32_t>) { return std::make_shared<OneModThree>(); };
    if (i == 4) {
      p.allowed_token_ids.emplace();
      for (int32_t t = 0; t < 400; t += 2) p.allowed_token_ids->push_back(t);
    }
    if (i == 5) p.bad_words_token_ids = {{17}, {40, 41}};
    std::vector<int32_t> prompt;
    for (int t = 0; t < 5 + i; ++t) prompt.push_back(int32_t(rng() % 200) + 3);
    engine.add_request("r" + std::to_string(i), prompt, p);
  }
  std::map<std::string, std::vector<int32_t>> tokens;
  std::vector<float> lps;
  while (engine.has_unfinished())
    for (const EngineOutput& o : engine.step()) {
      tokens[o.request_id].insert(tokens[o.request_id].end(), o.new_token_ids.begin(),
                                  o.new_token_ids.end());
      for (const SampleResult& l : o.logprobs) lps.push_back(l.logprob);
    }
  return {tokens, lps};
}

void expect_same_run(const std::pair<std::map<std::string, std::vector<int32_t>>, std::vector<float>>& a,
                     const std::pair<std::map<std::string, std::vector<int32_t>>, std::vector<float>>& b,
                     double tol) {
  EXPECT_EQ(a.first.size(), 6u);
  EXPECT_FALSE(a.second.empty());
  EXPECT_EQ(a.first, b.first);
  ASSERT_EQ(a.second.size(), b.second.size());
  for (size_t i = 0; i < a.second.size(); ++i) EXPECT_NEAR(a.second[i], b.second[i], tol) << i;
}

// Every token of the masked requests of run_engine obeys its mask.
void expect_masks_obeyed(const std::map<std::string, std::vector<int32_t>>& tokens) {
  for (int32_t t : tokens.at("r3")) EXPECT_EQ(t % 3, 1) << t;
  for (int32_t t : tokens.at("r4")) EXPECT_TRUE(t % 2 == 0 && t < 400) << t;
  const std::vector<int32_t>& r5 = tokens.at("r5");
  for (size_t i = 0; i < r5.size(); ++i) {
    EXPECT_NE(r5[i], 17);
    if (i > 0) {
      EXPECT_FALSE(r5[i - 1] == 40 && r5[i] == 41) << i;
    }
  }
}

TEST(DeviceSampler, EngineMasksHoldOnTheRunnerPath) {
  const auto run = run_engine(vt::Device::cpu(), true);
  EXPECT_EQ(run.first.size(), 6u);
  expect_masks_obeyed(run.first);
}

// On cuda:0 (vt::sample where the logits are) against the same logits sampled on the host.
TEST(CudaDeviceSampler, EngineOnCudaSamplesAsTheHostPath) {
  if (vt::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto device = run_engine(vt::Device::cuda(0), true);
  expect_same_run(device, run_engine(vt::Device::cuda(0), false), 1e-4);
  expect_masks_obeyed(device.first);
}

}  // namespace
}  // namespace vtllm::engine
