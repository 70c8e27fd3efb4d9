#include "engine/logits_processing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "base/error.h"

namespace vtllm::engine {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float max_of(std::span<const float> x) { return *std::max_element(x.begin(), x.end()); }

void check_id(int32_t t, size_t vocab, const char* what) {
  if (t < 0 || static_cast<size_t>(t) >= vocab)
    VT_THROW("sampler: ", what, " token id ", t, " is outside the vocabulary [0, ", vocab, ")");
}

}  // namespace

void apply_penalties(std::span<float> logits, std::span<const int32_t> prompt,
                     std::span<const int32_t> output, float repetition, float frequency,
                     float presence) {
  const size_t v = logits.size();
  if (repetition != 1.0f) {
    std::vector<bool> seen(v, false);
    for (auto tokens : {prompt, output})
      for (int32_t t : tokens) {
        check_id(t, v, "penalized");
        seen[t] = true;
      }
    for (size_t i = 0; i < v; ++i)
      if (seen[i]) logits[i] = logits[i] > 0 ? logits[i] / repetition : logits[i] * repetition;
  }
  if (frequency != 0.0f || presence != 0.0f) {
    std::unordered_map<int32_t, int> counts;
    for (int32_t t : output) {
      check_id(t, v, "penalized");
      ++counts[t];
    }
    for (const auto& [t, c] : counts) logits[t] -= frequency * static_cast<float>(c) + presence;
  }
}

void apply_logit_bias(std::span<float> logits, std::span<const std::pair<int32_t, float>> bias) {
  for (const auto& [t, b] : bias) {
    check_id(t, logits.size(), "logit_bias");
    logits[t] += b;
  }
}

void mask_tokens(std::span<float> logits, std::span<const int32_t> tokens) {
  for (int32_t t : tokens) {
    check_id(t, logits.size(), "masked");
    logits[t] = kNegInf;
  }
}

void keep_only(std::span<float> logits, std::span<const int32_t> allowed) {
  std::vector<char> keep(logits.size(), 0);
  for (int32_t t : allowed) {
    check_id(t, logits.size(), "allowed");
    keep[size_t(t)] = 1;
  }
  for (size_t i = 0; i < logits.size(); ++i)
    if (!keep[i]) logits[i] = kNegInf;
}

void apply_bitmask(std::span<float> logits, std::span<const uint32_t> words) {
  VT_CHECK(words.size() * 32 >= logits.size(), "bitmask: ", words.size(), " words for ",
           logits.size(), " tokens");
  for (size_t i = 0; i < logits.size(); ++i)
    if (!((words[i / 32] >> (i % 32)) & 1u)) logits[i] = kNegInf;
}

std::vector<int32_t> bad_word_tokens(std::span<const std::vector<int32_t>> words,
                                     std::span<const int32_t> output) {
  std::vector<int32_t> out;
  for (const std::vector<int32_t>& w : words) {
    if (w.empty() || w.size() > output.size() + 1) continue;
    const size_t prefix = w.size() - 1;
    if (std::equal(w.begin(), w.begin() + long(prefix), output.end() - long(prefix)))
      out.push_back(w.back());
  }
  return out;
}

void apply_min_p(std::span<float> logits, float min_p) {
  if (min_p <= 0) return;
  // p_i >= min_p * p_max  <=>  l_i - l_max >= log(min_p): no softmax needed.
  const float threshold = max_of(logits) + std::log(min_p);
  for (float& l : logits)
    if (l < threshold) l = kNegInf;
}

void apply_top_k(std::span<float> logits, int k) {
  if (k <= 0 || static_cast<size_t>(k) >= logits.size()) return;
  std::vector<float> sorted(logits.begin(), logits.end());
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<float>());
  const float kth = sorted[k - 1];
  for (float& l : logits)
    if (l < kth) l = kNegInf;
}

void apply_top_p(std::span<float> logits, float p) {
  if (p >= 1.0f) return;
  std::vector<int32_t> order;
  order.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != kNegInf) order.push_back(static_cast<int32_t>(i));
  if (order.empty()) return;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] < logits[b] : a > b;
  });
  const double m = logits[order.back()];
  double total = 0;
  for (int32_t i : order) total += std::exp(logits[i] - m);
  // Remove from the bottom while the removed mass, including this token, stays <= 1 - p.
  double cum = 0;
  for (size_t j = 0; j + 1 < order.size(); ++j) {
    cum += std::exp(logits[order[j]] - m) / total;
    if (cum > 1.0 - p) break;
    logits[order[j]] = kNegInf;
  }
}

int32_t argmax(std::span<const float> logits) {
  VT_CHECK(!logits.empty(), "sampler: argmax of an empty row");
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::vector<float> log_softmax(std::span<const float> logits) {
  const double m = max_of(logits);
  VT_CHECK(m != kNegInf, "sampler: every token of the row is masked");
  double total = 0;
  for (float l : logits) total += std::exp(l - m);
  const double log_z = m + std::log(total);
  std::vector<float> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<float>(logits[i] - log_z);
  return out;
}

int32_t sample_from_logits(std::span<const float> logits, double u) {
  const double m = max_of(logits);
  VT_CHECK(m != kNegInf, "sampler: every token of the row is masked");
  double total = 0;
  for (float l : logits) total += std::exp(l - m);
  const double target = u * total;
  double cum = 0;
  int32_t last = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == kNegInf) continue;
    last = static_cast<int32_t>(i);
    cum += std::exp(logits[i] - m);
    if (cum > target) return last;
  }
  return last;  // u * total rounded to the very top
}

}  // namespace vtllm::engine
