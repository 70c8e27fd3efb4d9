// vt::sample on the CPU: each row widened to f32, edited, filtered and drawn from
// in the order of vt/ops/sampling.h, rows in parallel. Top-k and top-p by the CUDA
// arm's algorithm run sequentially (radix select on float keys, fixed-point masses
// through vt::sampling, the closed-form tie count), so the engine's sort-based
// Sampler checks that algorithm on the CPU (tests/engine/device_sampler_test.cpp);
// logprobs in double as the engine's log_softmax. "raw" below is the row after its
// logits_mask.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "vt/cpu/rowio.h"
#include "vt/cpu/sampling.h"
#include "vt/ops/sampling_rules.h"

namespace vt::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct RowOut {
  int32_t token = -1;
  float logprob = 0;
  int64_t rank = 0;
  std::vector<std::pair<int32_t, float>> top;
};

// Step 0: -inf where the mask row (if any) has the token's bit clear.
void apply_mask(std::vector<float>& x, const SampleBatch& b, int32_t mask) {
  if (mask < 0) return;
  const uint32_t* w = b.bitmask.data() + size_t(mask) * size_t(mask_words(int64_t(x.size())));
  for (size_t i = 0; i < x.size(); ++i)
    if (!mask_allows(w, int64_t(i))) x[i] = kNegInf;
}

void apply_edits(std::vector<float>& x, const SampleBatch& b, size_t r) {
  const SampleRowParams& p = b.rows[r];
  for (int64_t i = b.edit_start[r]; i < b.edit_start[r + 1]; ++i) {
    const SampleTokenEdit& e = b.edits[size_t(i)];
    float v = x[size_t(e.token)];
    if (e.masked) v = kNegInf;
    for (int32_t j = e.bias_begin; j < e.bias_end; ++j) v += b.bias[size_t(j)];
    if (p.repetition != 1.0f && (e.in_prompt || e.output_count > 0))
      v = v > 0 ? v / p.repetition : v * p.repetition;
    if ((p.frequency != 0.0f || p.presence != 0.0f) && e.output_count > 0)
      v -= p.frequency * static_cast<float>(e.output_count) + p.presence;
    x[size_t(e.token)] = v;
  }
}

struct Selected {
  uint32_t key;
  uint64_t above;  // weight of the keys > key
};

// The CUDA arm's radix_select (cuda/sampling/block_select.cuh), sequentially: the
// largest key K with pred(weight of keys >= K), by passes of 12, 10 and 10 bits.
template <class Pred>
Selected radix_select(const std::vector<uint32_t>& keys, const std::vector<uint64_t>& weight,
                      Pred pred) {
  constexpr int kShift[3] = {20, 10, 0}, kBits[3] = {12, 10, 10};
  uint32_t prefix = 0, mask = 0;
  uint64_t above = 0;
  std::vector<uint64_t> hist;
  for (int pass = 0; pass < 3; ++pass) {
    const uint32_t bins = 1u << kBits[pass];
    hist.assign(bins, 0);
    for (size_t i = 0; i < keys.size(); ++i)
      if (weight[i] != 0 && (keys[i] & mask) == prefix)
        hist[(keys[i] >> kShift[pass]) & (bins - 1)] += weight[i];
    uint32_t digit = 0;  // no digit satisfies pred: the lowest, with everything above
    uint64_t cum = above;
    for (uint32_t d = bins; d-- > 0;) {
      if (pred(cum + hist[d])) {
        digit = d;
        break;
      }
      cum += hist[d];
    }
    above = cum;
    prefix |= digit << kShift[pass];
    mask |= (bins - 1) << kShift[pass];
  }
  return {prefix, above};
}

float kth_largest(const std::vector<float>& x, int k) {
  std::vector<uint32_t> keys(x.size());
  for (size_t i = 0; i < x.size(); ++i) keys[i] = sampling::order_key(x[i]);
  const std::vector<uint64_t> ones(x.size(), 1);
  return sampling::key_value(
      radix_select(keys, ones, [k](uint64_t c) { return c >= uint64_t(k); }).key);
}

// Top-p as the CUDA arm finds it: v* = the largest value with mass(x >= v*) >= p *
// total; of the tokens tied at v* (lower ids first) the first c stay, c the count
// whose mass before them is < p * total (the first always stays).
void apply_top_p(std::vector<float>& x, float top_p, float m) {
  std::vector<uint32_t> keys(x.size());
  std::vector<uint64_t> w(x.size());
  uint64_t total = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    keys[i] = sampling::order_key(x[i]);
    w[i] = sampling::mass_fixed(x[i], m);
    total += w[i];
  }
  const double budget = double(top_p) * double(total);
  const Selected sel = radix_select(keys, w, [budget](uint64_t c) { return double(c) >= budget; });
  const float vstar = sampling::key_value(sel.key);
  const uint64_t each = sampling::mass_fixed(vstar, m);
  const uint64_t tied = uint64_t(std::count(x.begin(), x.end(), vstar));
  uint64_t lo = 1, hi = tied;
  while (lo < hi) {
    const uint64_t mid = (lo + hi) / 2;
    if (double(sel.above + mid * each) < budget) lo = mid + 1; else hi = mid;
  }
  uint64_t kept_ties = 0;
  for (float& v : x) {
    if (v < vstar) v = kNegInf;
    else if (v == vstar && ++kept_ties > lo) v = kNegInf;
  }
}

// Steps 1-2 without the draw; returns the row's max after temperature (the draw's m).
float process(std::vector<float>& x, const SampleRowParams& p) {
  for (float& v : x) v /= p.temperature;
  const float m = *std::max_element(x.begin(), x.end());
  VT_CHECK(m != kNegInf, "sample: every token of the row is masked");
  if (p.log_min_p != kNegInf) {
    const float threshold = m + p.log_min_p;
    for (float& v : x)
      if (v < threshold) v = kNegInf;
  }
  if (p.top_k > 0 && size_t(p.top_k) < x.size()) {
    const float kth = kth_largest(x, p.top_k);
    for (float& v : x)
      if (v < kth) v = kNegInf;
  }
  if (p.top_p < 1.0f) apply_top_p(x, p.top_p, m);
  return m;
}

int32_t draw(const std::vector<float>& x, float m, double u) {
  uint64_t total = 0;
  int32_t last = -1;
  for (size_t i = 0; i < x.size(); ++i) {
    const uint64_t w = sampling::mass_fixed(x[i], m);
    total += w;
    if (w > 0) last = int32_t(i);
  }
  const double target = u * double(total);
  uint64_t cum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    cum += sampling::mass_fixed(x[i], m);
    if (double(cum) > target) return int32_t(i);
  }
  return last;  // u * total rounded to the very top
}

void fill_logprobs(const std::vector<float>& y, int32_t token, int n, RowOut& out) {
  const double m = *std::max_element(y.begin(), y.end());
  VT_CHECK(m != kNegInf, "sample: every token of the row is masked");
  double total = 0;
  for (float l : y) total += std::exp(l - m);
  const double log_z = m + std::log(total);
  std::vector<float> lp(y.size());
  for (size_t i = 0; i < y.size(); ++i) lp[i] = sampling::logprob(y[i], log_z);
  out.logprob = lp[size_t(token)];
  out.rank = std::count_if(lp.begin(), lp.end(), [&](float v) { return v >= out.logprob; });
  // Top-N as the CUDA arm finds it: the N-th largest value by radix select, the values
  // above it and its first ties by id, then ordered by logprob (lower id first).
  n = std::min<int>(n, int(y.size()));
  if (n == 0) return;
  const float vn = kth_largest(y, n);
  int64_t ties = n - std::count_if(y.begin(), y.end(), [&](float v) { return v > vn; });
  std::vector<int32_t> ids;
  for (size_t i = 0; i < y.size(); ++i)
    if (y[i] > vn || (y[i] == vn && ties-- > 0)) ids.push_back(int32_t(i));
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return lp[size_t(a)] != lp[size_t(b)] ? lp[size_t(a)] > lp[size_t(b)] : a < b;
  });
  for (int32_t i : ids) out.top.push_back({i, lp[size_t(i)]});
}

}  // namespace

SampleOutput sample(Stream& s, const Rows& logits, const SampleBatch& b) {
  const int64_t v = logits.cols;
  std::vector<RowOut> rows(size_t(logits.rows));
  s.parallel_for(logits.rows, 1, [&](int64_t r0, int64_t r1) {
    std::vector<float> raw(static_cast<size_t>(v)), x;
    for (int64_t r = r0; r < r1; ++r) {
      const SampleRowParams& p = b.rows[size_t(r)];
      RowOut& out = rows[size_t(r)];
      load_row(logits.row(r), logits.dtype, v, raw.data());
      apply_mask(raw, b, p.logits_mask);
      x = raw;
      apply_mask(x, b, p.token_mask);
      apply_edits(x, b, size_t(r));
      if (p.temperature < kGreedyTemperature) {
        out.token = int32_t(std::max_element(x.begin(), x.end()) - x.begin());
      } else {
        const float m = process(x, p);
        out.token = draw(x, m, p.uniform);
      }
      if (p.logprobs >= 0) fill_logprobs(b.processed_logprobs ? x : raw, out.token, p.logprobs, out);
    }
  });
  SampleOutput o;
  o.top_start.push_back(0);
  for (RowOut& r : rows) {
    o.token.push_back(r.token);
    o.logprob.push_back(r.logprob);
    o.rank.push_back(r.rank);
    for (const auto& [t, lp] : r.top) {
      o.top_token.push_back(t);
      o.top_logprob.push_back(lp);
    }
    o.top_start.push_back(int64_t(o.top_token.size()));
  }
  return o;
}

}  // namespace vt::cpu
