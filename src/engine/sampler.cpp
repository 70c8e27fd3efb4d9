#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

// The row after step 0 (what raw logprobs see).
std::vector<float> constrained_logits(std::span<const float> logits, const SamplerRow& row) {
  std::vector<float> x(logits.begin(), logits.end());
  if (!row.constraint_mask.empty()) apply_bitmask(x, row.constraint_mask);
  return x;
}

}  // namespace

std::vector<float> processed_logits(std::span<const float> logits, const SamplerRow& row) {
  const SamplingParams& p = *row.params;
  std::vector<float> x = constrained_logits(logits, row);
  if (p.allowed_token_ids) keep_only(x, *p.allowed_token_ids);
  mask_tokens(x, bad_word_tokens(p.bad_words_token_ids, row.output_token_ids));
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
    const std::vector<float> raw = config_.logprobs_mode == LogprobsMode::kRaw
                                       ? constrained_logits(logits, row)
                                       : std::vector<float>();
    fill_logprobs(config_.logprobs_mode == LogprobsMode::kRaw ? std::span<const float>(raw)
                                                              : std::span<const float>(x),
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

vt::SampleBatch Sampler::device_batch(std::span<const SamplerRow> rows, int64_t vocab_size) {
  VT_CHECK(vocab_size > 0, "sampler: vocab_size = ", vocab_size);
  vt::SampleBatch b;
  b.processed_logprobs = config_.logprobs_mode == LogprobsMode::kProcessed;
  b.edit_start.push_back(0);
  // Entries go back to -1 after each row (also when a row throws), so the map is
  // filled once per vocabulary size, not per step.
  if (edit_of_.size() != static_cast<size_t>(vocab_size))
    edit_of_.assign(static_cast<size_t>(vocab_size), -1);
  for (const SamplerRow& row : rows) {
    VT_CHECK(row.params != nullptr, "sampler: a row without sampling params");
    const SamplingParams& p = *row.params;
    vt::SampleRowParams rp;
    rp.temperature = p.temperature;
    rp.log_min_p = p.min_p > 0 ? std::log(p.min_p) : -std::numeric_limits<float>::infinity();
    rp.top_k = p.top_k;
    rp.top_p = p.top_p;
    rp.repetition = p.repetition_penalty;
    rp.frequency = p.frequency_penalty;
    rp.presence = p.presence_penalty;
    rp.logprobs = p.logprobs ? *p.logprobs : -1;
    const int64_t words = vt::mask_words(vocab_size);
    const auto new_mask_row = [&]() {
      const int32_t k = static_cast<int32_t>(b.bitmask.size() / static_cast<size_t>(words));
      b.bitmask.resize(b.bitmask.size() + static_cast<size_t>(words), 0u);
      return k;
    };
    if (row.constrained) {
      VT_CHECK(row.constraint_mask.empty() || int64_t(row.constraint_mask.size()) == words,
               "sampler: a constraint mask of ", row.constraint_mask.size(), " words, expected ",
               words);
      rp.logits_mask = new_mask_row();
      std::copy(row.constraint_mask.begin(), row.constraint_mask.end(),
                mask_row(b, rp.logits_mask, vocab_size).begin());
    }
    if (p.allowed_token_ids) {
      rp.token_mask = new_mask_row();
      const std::span<uint32_t> m = mask_row(b, rp.token_mask, vocab_size);
      for (int32_t t : *p.allowed_token_ids) {
        if (t < 0 || t >= vocab_size)
          VT_THROW("sampler: allowed token id ", t, " is outside the vocabulary [0, ", vocab_size,
                   ")");
        m[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
      }
    }
    if (!p.greedy()) rp.uniform = next_uniform(row);
    b.rows.push_back(rp);

    const size_t first = b.edits.size();
    struct Reset {  // the row's entries of edit_of_ back to -1
      std::vector<int32_t>& map;
      const std::vector<vt::SampleTokenEdit>& edits;
      size_t first;
      ~Reset() {
        for (size_t i = first; i < edits.size(); ++i) map[static_cast<size_t>(edits[i].token)] = -1;
      }
    } reset{edit_of_, b.edits, first};
    const auto edit = [&](int32_t t, const char* what) -> vt::SampleTokenEdit& {
      if (t < 0 || t >= vocab_size)
        VT_THROW("sampler: ", what, " token id ", t, " is outside the vocabulary [0, ", vocab_size, ")");
      int32_t& at = edit_of_[static_cast<size_t>(t)];
      if (at < 0) {
        at = static_cast<int32_t>(b.edits.size() - first);
        b.edits.push_back({.token = t});
      }
      return b.edits[first + static_cast<size_t>(at)];
    };
    if (static_cast<int64_t>(row.output_token_ids.size()) < p.min_tokens) {
      for (int32_t t : p.stop_token_ids) edit(t, "masked").masked = true;
      if (!p.ignore_eos)
        for (int32_t t : row.eos_token_ids) edit(t, "masked").masked = true;
    }
    for (const auto& [t, bias] : p.logit_bias) {
      vt::SampleTokenEdit& e = edit(t, "logit_bias");
      // An edit's bias values are contiguous: a token biased twice moves its range to
      // the end (in order).
      if (e.bias_end != e.bias_begin && e.bias_end != static_cast<int32_t>(b.bias.size())) {
        const std::vector<float> earlier(b.bias.begin() + e.bias_begin, b.bias.begin() + e.bias_end);
        e.bias_begin = static_cast<int32_t>(b.bias.size());
        b.bias.insert(b.bias.end(), earlier.begin(), earlier.end());
      } else if (e.bias_end == e.bias_begin) {
        e.bias_begin = static_cast<int32_t>(b.bias.size());
      }
      b.bias.push_back(bias);
      e.bias_end = static_cast<int32_t>(b.bias.size());
    }
    for (int32_t t : bad_word_tokens(p.bad_words_token_ids, row.output_token_ids))
      edit(t, "bad_words").masked = true;
    if (p.repetition_penalty != 1.0f)
      for (int32_t t : row.prompt_token_ids) edit(t, "penalized").in_prompt = true;
    if (p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f)
      for (int32_t t : row.output_token_ids) ++edit(t, "penalized").output_count;
    b.edit_start.push_back(static_cast<int64_t>(b.edits.size()));
  }
  return b;
}

std::span<uint32_t> Sampler::mask_row(vt::SampleBatch& b, int32_t k, int64_t vocab_size) {
  const size_t words = static_cast<size_t>(vt::mask_words(vocab_size));
  VT_CHECK(k >= 0 && (static_cast<size_t>(k) + 1) * words <= b.bitmask.size(), "sampler: mask row ",
           k, " of ", b.bitmask.size() / words);
  return std::span<uint32_t>(b.bitmask).subspan(static_cast<size_t>(k) * words, words);
}

std::vector<SampleResult> Sampler::results(const vt::SampleOutput& out,
                                           std::span<const SamplerRow> rows) {
  VT_CHECK(out.token.size() == rows.size(), "sampler: ", out.token.size(), " samples for ",
           rows.size(), " rows");
  std::vector<SampleResult> res(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    res[r].token = out.token[r];
    if (!rows[r].params->logprobs) continue;
    res[r].logprob = out.logprob[r];
    res[r].rank = out.rank[r];
    for (int64_t i = out.top_start[r]; i < out.top_start[r + 1]; ++i)
      res[r].top_logprobs.push_back({out.top_token[size_t(i)], out.top_logprob[size_t(i)]});
  }
  return res;
}

}  // namespace vtllm::engine
