// The device sampler's kernel (CUDA sources only; launched by sample.cu): one CTA of
// kThreads per logits row. What each step does and why: sample.cu's header comment
// and docs/KERNELS.md.
#pragma once

#include <cstdint>

#include "vt/cuda/common.cuh"
#include "vt/cuda/sampling/block_select.cuh"
#include "vt/ops/sampling.h"
#include "vt/ops/sampling_rules.h"

namespace vt::cuda::sample_detail {

using vt::cuda::sampling::BlockShared;
using vt::cuda::sampling::kThreads;
using vt::sampling::key_value;
using vt::sampling::logprob;
using vt::sampling::mass_fixed;
using vt::sampling::order_key;

struct RowDev {
  float temperature, log_min_p, top_p, repetition, frequency, presence;
  int32_t top_k, logprobs;
  int32_t logits_mask, token_mask;  // SampleBatch::bitmask rows; -1: none
  double uniform;
  int64_t edit_begin, edit_end, top_offset;
};

struct OutRow {
  int32_t token;
  int32_t error;  // 1: every token masked before the draw; 2: before the logprobs
  float logprob;
  int32_t pad;
  int64_t rank;
};

struct TopShared {
  int32_t id[kMaxDeviceLogprobs];
  float lp[kMaxDeviceLogprobs];
  int count;
};

struct Args {
  RowsRef logits;
  int64_t vocab;
  float* work;  // [rows, vocab]
  const RowDev* rows;
  const SampleTokenEdit* edits;
  const float* bias;
  const uint32_t* bitmask;  // mask rows of mask_words words
  int64_t mask_words;
  bool processed;
  OutRow* out;
  int32_t* top_id;
  float* top_lp;
};

// Steps 2's filters as a predicate: the value a token has after them (-inf: removed).
struct Filter {
  float thr = -INFINITY, kth = -INFINITY, vstar = -INFINITY;
  int64_t tie_limit = INT64_MAX;  // with top_p: tokens at v* with a larger id go
  bool top_p = false;
  __device__ float apply(float v, int64_t i) const {
    if (v < thr || v < kth) return -INFINITY;
    if (top_p && (v < vstar || (v == vstar && i > tie_limit))) return -INFINITY;
    return v;
  }
};

// The mask row `k` of a.bitmask, or null for k < 0.
__device__ const uint32_t* mask_row(const Args& a, int32_t k) {
  return k < 0 ? nullptr : a.bitmask + int64_t(k) * a.mask_words;
}

// v, or -inf when `mask` is set and has token i's bit clear (step 0).
__device__ float masked(const uint32_t* mask, int64_t i, float v) {
  return mask && !((__ldg(mask + (i >> 5)) >> (i & 31)) & 1u) ? -INFINITY : v;
}

__device__ float edited(float v, const SampleTokenEdit& e, const RowDev& p, const float* bias) {
  if (e.masked) v = -INFINITY;
  for (int32_t j = e.bias_begin; j < e.bias_end; ++j) v = __fadd_rn(v, bias[j]);
  if (p.repetition != 1.0f && (e.in_prompt || e.output_count > 0))
    v = v > 0 ? __fdiv_rn(v, p.repetition) : __fmul_rn(v, p.repetition);
  if ((p.frequency != 0.0f || p.presence != 0.0f) && e.output_count > 0)
    v = __fsub_rn(v, __fadd_rn(__fmul_rn(p.frequency, float(e.output_count)), p.presence));
  return v;
}

using vt::cuda::sampling::for_strided;

__device__ unsigned long long count_equal(BlockShared& sh, int64_t n, float value,
                                          const float* x, const Filter& f) {
  unsigned long long c = 0;
  for_strided(threadIdx.x, n, kThreads, [&](int64_t i) { return x[i]; },
              [&](float v, int64_t i) { c += f.apply(v, i) == value; });
  return sampling::block_sum_u64(sh, c);
}

// Top-p: narrows f to the tokens the CPU's sorted definition keeps.
__device__ void top_p_filter(BlockShared& sh, int64_t n, const float* x, float m, float top_p,
                             Filter& f) {
  const auto load = [&](int64_t i) { return x[i]; };
  unsigned long long total = 0;
  for_strided(threadIdx.x, n, kThreads, load,
              [&](float v, int64_t i) { total += mass_fixed(f.apply(v, i), m); });
  total = sampling::block_sum_u64(sh, total);
  const double budget = double(top_p) * double(total);
  const sampling::Selected sel = sampling::radix_select(
      sh, n, load,
      [&](float raw, int64_t i, uint32_t* key) {
        const float v = f.apply(raw, i);
        *key = order_key(v);
        return static_cast<unsigned long long>(mass_fixed(v, m));
      },
      [budget](unsigned long long c) { return double(c) >= budget; });
  const float vstar = key_value(sel.key);
  const unsigned long long each = mass_fixed(vstar, m);
  const unsigned long long tied = count_equal(sh, n, vstar, x, f);
  // The k-th tied token (k from 0, lower ids first) stays while the mass before it is
  // < budget; k = 0 always stays (the mass above v* is < budget by the selection).
  unsigned long long lo = 1, hi = tied;
  while (lo < hi) {
    const unsigned long long mid = (lo + hi) / 2;
    if (double(sel.above + mid * each) < budget) lo = mid + 1; else hi = mid;
  }
  const Filter before = f;
  f.vstar = vstar;
  f.top_p = true;
  if (lo < tied)
    f.tie_limit = sampling::nth_match(sh, n, int64_t(lo), load, [&](float v, int64_t i) {
      return before.apply(v, i) == vstar;
    });
}

__device__ int64_t draw(BlockShared& sh, int64_t n, const float* x, float m, double u,
                        const Filter& f) {
  const auto load = [&](int64_t i) { return x[i]; };
  const auto weight = [&](float v, int64_t i) {
    return static_cast<unsigned long long>(mass_fixed(f.apply(v, i), m));
  };
  unsigned long long total = 0;
  float last = -1;
  for_strided(threadIdx.x, n, kThreads, load, [&](float v, int64_t i) {
    const unsigned long long w = weight(v, i);
    total += w;
    if (w > 0) last = float(i);  // ids < 2^23 are exact in a float
  });
  total = sampling::block_sum_u64(sh, total);
  last = sampling::block_max(sh, last);
  const int64_t id = sampling::first_crossing(sh, n, u * double(total), load, weight);
  return id >= 0 ? id : int64_t(last);  // u * total rounded to the very top
}

template <class Y>
__device__ void fill_logprobs(BlockShared& sh, TopShared& top, const Args& a, const RowDev& p,
                              int64_t n, int64_t token, Y y, OutRow& out) {
  const auto each = [&](auto use) { for_strided(threadIdx.x, n, kThreads, y, use); };
  float my = -INFINITY;
  each([&](float v, int64_t) { my = fmaxf(my, v); });
  my = sampling::block_max(sh, my);
  if (my == -INFINITY) {
    out.error = 2;
    return;
  }
  double total = 0;
  each([&](float v, int64_t) { total += exp(double(v) - double(my)); });
  total = sampling::block_sum_f64(sh, total);
  const double log_z = double(my) + log(total);
  const float lp_token = logprob(y(token), log_z);
  unsigned long long rank = 0;
  each([&](float v, int64_t) { rank += logprob(v, log_z) >= lp_token; });
  out.logprob = lp_token;
  out.rank = int64_t(sampling::block_sum_u64(sh, rank));
  const int64_t want = min(int64_t(p.logprobs), n);
  if (want == 0) return;
  const sampling::Selected sel = sampling::radix_select(
      sh, n, y,
      [&](float v, int64_t, uint32_t* key) {
        *key = order_key(v);
        return 1ull;
      },
      [want](unsigned long long c) { return c >= static_cast<unsigned long long>(want); });
  const float vn = key_value(sel.key);
  const int64_t need = want - int64_t(sel.above);  // tied tokens to take, lowest ids first
  unsigned long long tied = 0;
  each([&](float v, int64_t) { tied += v == vn; });
  tied = sampling::block_sum_u64(sh, tied);
  const int64_t limit =
      need >= int64_t(tied)
          ? INT64_MAX
          : sampling::nth_match(sh, n, need, y, [&](float v, int64_t) { return v == vn; });
  if (threadIdx.x == 0) top.count = 0;
  __syncthreads();
  each([&](float v, int64_t i) {
    if (v > vn || (v == vn && i <= limit)) {
      const int slot = atomicAdd(&top.count, 1);
      top.id[slot] = int32_t(i);
      top.lp[slot] = logprob(v, log_z);
    }
  });
  __syncthreads();
  for (int c = threadIdx.x; c < want; c += kThreads) {
    int pos = 0;
    for (int j = 0; j < want; ++j)
      pos += top.lp[j] > top.lp[c] || (top.lp[j] == top.lp[c] && top.id[j] < top.id[c]);
    a.top_id[p.top_offset + pos] = top.id[c];
    a.top_lp[p.top_offset + pos] = top.lp[c];
  }
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads, 1) sample_kernel(Args a) {
  __shared__ BlockShared sh;
  __shared__ TopShared top;
  const int64_t r = blockIdx.x, n = a.vocab;
  const RowDev p = a.rows[r];
  const void* src = a.logits.row(r);
  const DType ldt = a.logits.dtype;
  float* x = a.work + r * n;
  const auto load_x = [&](int64_t i) { return x[i]; };
  const uint32_t* lmask = mask_row(a, p.logits_mask);
  const uint32_t* tmask = mask_row(a, p.token_mask);
  // The raw row (what raw logprobs see): the logits after logits_mask.
  const auto load_raw = [&](int64_t i) { return masked(lmask, i, load_f32(src, ldt, i)); };
  for_strided(threadIdx.x, n, kThreads, load_raw,
              [&](float v, int64_t i) { x[i] = masked(tmask, i, v); });
  __syncthreads();
  for (int64_t e = p.edit_begin + threadIdx.x; e < p.edit_end; e += kThreads) {
    const SampleTokenEdit& ed = a.edits[e];
    x[ed.token] = edited(x[ed.token], ed, p, a.bias);
  }
  __syncthreads();

  OutRow out{-1, 0, 0.0f, 0, 0};
  const bool greedy = p.temperature < kGreedyTemperature;
  Filter f;
  if (greedy) {
    float bv = -INFINITY;
    int64_t bi = INT64_MAX;
    for_strided(threadIdx.x, n, kThreads, load_x, [&](float v, int64_t i) {
      if (bi == INT64_MAX || v > bv) bv = v, bi = i;
    });
    out.token = int32_t(sampling::block_argmax(sh, bv, bi));
  } else {
    float m = -INFINITY;
    for_strided(threadIdx.x, n, kThreads, load_x, [&](float v, int64_t i) {
      v = __fdiv_rn(v, p.temperature);
      x[i] = v;
      m = fmaxf(m, v);
    });
    m = sampling::block_max(sh, m);  // its barrier orders the writes above
    if (m == -INFINITY) {
      out.error = 1;
    } else {
      if (p.log_min_p != -INFINITY) f.thr = __fadd_rn(m, p.log_min_p);
      if (p.top_k > 0 && p.top_k < n) {
        const unsigned long long k = static_cast<unsigned long long>(p.top_k);
        const sampling::Selected sel = sampling::radix_select(
            sh, n, load_x,
            [&](float v, int64_t i, uint32_t* key) {
              *key = order_key(f.apply(v, i));
              return 1ull;
            },
            [k](unsigned long long c) { return c >= k; });
        f.kth = key_value(sel.key);
      }
      if (p.top_p < 1.0f) top_p_filter(sh, n, x, m, p.top_p, f);
      out.token = int32_t(draw(sh, n, x, m, p.uniform, f));
    }
  }
  if (p.logprobs >= 0 && out.error == 0) {
    const int64_t token = out.token;
    if (!a.processed)
      fill_logprobs(sh, top, a, p, n, token, load_raw, out);
    else if (greedy)
      fill_logprobs(sh, top, a, p, n, token, load_x, out);
    else
      fill_logprobs(sh, top, a, p, n, token, [&](int64_t i) { return f.apply(x[i], i); }, out);
  }
  if (threadIdx.x == 0) a.out[r] = out;
}

}  // namespace vt::cuda::sample_detail
