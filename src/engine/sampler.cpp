#include "engine/sampler.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"
#include "engine/logits_processing.h"
#include "engine/philox.h"

namespace vtllm::engine {
namespace {

// Counter word 2 separates the seeded streams (0) from the engine stream (1).
constexpr uint32_t kSeededStream = 0, kEngineStream = 1;

void fill_logprobs(std::span<const float> logits, int32_t token, int n, SampleResult& out) {
  const std::vector<float> lp = log_softmax(logits);
  out.logprob = lp[token];
  out.rank = std::count_if(lp.begin(), lp.end(), [&](float x) { return x >= lp[token]; });
  std::vector<int32_t> ids(lp.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto by_logprob = [&](int32_t a, int32_t b) { return lp[a] != lp[b] ? lp[a] > lp[b] : a < b; };
  n = std::min<int>(n, static_cast<int>(ids.size()));
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), by_logprob);
  for (int i = 0; i < n; ++i) out.top_logprobs.push_back({ids[i], lp[ids[i]]});
}

}  // namespace

std::vector<float> processed_logits(std::span<const float> logits, const SamplerRow& row) {
  const SamplingParams& p = *row.params;
  std::vector<float> x(logits.begin(), logits.end());
  if (static_cast<int64_t>(row.output_token_ids.size()) < p.min_tokens) {
    mask_tokens(x, p.stop_token_ids);
    if (!p.ignore_eos) mask_tokens(x, row.eos_token_ids);
  }
  apply_logit_bias(x, p.logit_bias);
  apply_penalties(x, row.prompt_token_ids, row.output_token_ids, p.repetition_penalty,
                  p.frequency_penalty, p.presence_penalty);
  if (p.greedy()) return x;
  for (float& l : x) l /= p.temperature;
  apply_min_p(x, p.min_p);
  apply_top_k(x, p.top_k);
  apply_top_p(x, p.top_p);
  return x;
}

Sampler::Sampler(const SamplerConfig& config) : config_(config) {}

double Sampler::next_uniform(const SamplerRow& row) {
  if (row.params->seed) {
    const uint64_t step = row.output_token_ids.size();
    return philox_uniform({static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32),
                           kSeededStream, 0},
                          philox_key(*row.params->seed));
  }
  const uint64_t i = unseeded_draws_++;
  return philox_uniform(
      {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), kEngineStream, 0},
      philox_key(config_.seed));
}

SampleResult Sampler::sample_row(std::span<const float> logits, const SamplerRow& row) {
  VT_CHECK(row.params != nullptr, "sampler: a row without sampling params");
  SampleResult out;
  const std::vector<float> x = processed_logits(logits, row);
  out.token = row.params->greedy() ? argmax(x) : sample_from_logits(x, next_uniform(row));
  if (row.params->logprobs) {
    fill_logprobs(config_.logprobs_mode == LogprobsMode::kRaw ? logits : std::span<const float>(x),
                  out.token, *row.params->logprobs, out);
  }
  return out;
}

std::vector<SampleResult> Sampler::sample(std::span<const float> logits, int64_t vocab_size,
                                          std::span<const SamplerRow> rows) {
  VT_CHECK(vocab_size > 0, "sampler: vocab_size = ", vocab_size);
  VT_CHECK(static_cast<int64_t>(logits.size()) == vocab_size * static_cast<int64_t>(rows.size()),
           "sampler: ", logits.size(), " logits for ", rows.size(), " rows of ", vocab_size);
  std::vector<SampleResult> out;
  out.reserve(rows.size());
  for (size_t r = 0; r < rows.size(); ++r)
    out.push_back(sample_row(logits.subspan(r * vocab_size, vocab_size), rows[r]));
  return out;
}

}  // namespace vtllm::engine
