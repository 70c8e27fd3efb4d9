// vt::sample on CUDA: one CTA of 512 threads per logits row (block_select.cuh).
//   1. the row is widened into an f32 work row and its edits applied (a thread per
//      touched token; tokens are distinct within a row, so no two threads collide);
//   2. greedy: block argmax; otherwise x / T in place and the row max m, then the
//      filters as a predicate over the work row (Filter), each found without a sort:
//      min_p is a threshold m + log_min_p; top_k's k-th largest value is a count
//      radix select over the float keys; top_p's last kept value v* is a mass radix
//      select (the largest v with mass(x >= v) >= p * total) and, when v* is tied,
//      the number of tied tokens kept follows from the masses in closed form and the
//      last kept id from nth_match (ties keep lower ids first, as the CPU's order);
//   3. the draw: the first id whose fixed-point cumulative mass exceeds u * total;
//   4. logprobs when asked: log_softmax in double, rank by a count, top-N by a count
//      radix select plus the tie rule, the N candidates sorted by rank counting.
// The result is copied back once; the call waits for the stream. A step of plain
// greedy rows (no edits, no logprobs) runs the argmax kernel alone.
#include <algorithm>
#include <cstring>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/sampling.h"
#include "vt/cuda/sampling/block_select.cuh"
#include "vt/cuda/stream_state.h"
#include "vt/ops/sampling_rules.h"

namespace vt::cuda {
namespace {

using sampling::BlockShared;
using sampling::kThreads;
using vt::sampling::key_value;
using vt::sampling::logprob;
using vt::sampling::mass_fixed;
using vt::sampling::order_key;

struct RowDev {
  float temperature, log_min_p, top_p, repetition, frequency, presence;
  int32_t top_k, logprobs;
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
  const char* logits;
  DType dtype;
  int64_t row_bytes, vocab;
  float* work;  // [rows, vocab]
  const RowDev* rows;
  const SampleTokenEdit* edits;
  const float* bias;
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

__device__ float edited(float v, const SampleTokenEdit& e, const RowDev& p, const float* bias) {
  if (e.masked) v = -INFINITY;
  for (int32_t j = e.bias_begin; j < e.bias_end; ++j) v = __fadd_rn(v, bias[j]);
  if (p.repetition != 1.0f && (e.in_prompt || e.output_count > 0))
    v = v > 0 ? __fdiv_rn(v, p.repetition) : __fmul_rn(v, p.repetition);
  if ((p.frequency != 0.0f || p.presence != 0.0f) && e.output_count > 0)
    v = __fsub_rn(v, __fadd_rn(__fmul_rn(p.frequency, float(e.output_count)), p.presence));
  return v;
}

using sampling::for_strided;

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
  const void* src = a.logits + r * a.row_bytes;
  float* x = a.work + r * n;
  const auto load_x = [&](int64_t i) { return x[i]; };
  for_strided(threadIdx.x, n, kThreads, [&](int64_t i) { return load_f32(src, a.dtype, i); },
              [&](float v, int64_t i) { x[i] = v; });
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
      fill_logprobs(sh, top, a, p, n, token, [&](int64_t i) { return load_f32(src, a.dtype, i); },
                    out);
    else if (greedy)
      fill_logprobs(sh, top, a, p, n, token, load_x, out);
    else
      fill_logprobs(sh, top, a, p, n, token, [&](int64_t i) { return f.apply(x[i], i); }, out);
  }
  if (threadIdx.x == 0) a.out[r] = out;
}

size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

SampleOutput sample(Stream& s, const Rows& logits, const SampleBatch& b) {
  const int64_t rows = logits.rows, vocab = logits.cols;
  SampleOutput o;
  o.top_start.push_back(0);
  std::vector<RowDev> dev_rows(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const SampleRowParams& p = b.rows[size_t(r)];
    dev_rows[size_t(r)] = {p.temperature, p.log_min_p, p.top_p, p.repetition, p.frequency,
                           p.presence, p.top_k, p.logprobs, p.uniform, b.edit_start[size_t(r)],
                           b.edit_start[size_t(r + 1)], o.top_start.back()};
    o.top_start.push_back(o.top_start.back() + (p.logprobs >= 0 ? std::min<int64_t>(p.logprobs, vocab) : 0));
  }
  if (rows == 0) return o;
  const size_t num_top = size_t(o.top_start.back());
  StreamState& st = s.cuda_state();
  set_device(st);

  // Plain greedy steps (no edits, no logprobs) need one pass: the argmax kernel.
  const bool plain_greedy =
      b.edits.empty() && std::all_of(b.rows.begin(), b.rows.end(), [](const SampleRowParams& p) {
        return p.temperature < kGreedyTemperature && p.logprobs < 0;
      });
  if (plain_greedy) {
    const Tensor ids = Tensor::empty({rows}, DType::kI32, s.device());
    argmax(s, logits, ids);
    o.token.resize(size_t(rows));
    VT_CUDA_CHECK(cudaMemcpyAsync(o.token.data(), ids.data_ptr(), size_t(rows) * sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, st.stream));
    VT_CUDA_CHECK(cudaStreamSynchronize(st.stream));
    o.logprob.assign(size_t(rows), 0.0f);
    o.rank.assign(size_t(rows), 0);
    return o;
  }

  // One upload: row params, edits, bias values.
  const size_t rows_at = 0, edits_at = align_up(rows_at + dev_rows.size() * sizeof(RowDev)),
               bias_at = align_up(edits_at + b.edits.size() * sizeof(SampleTokenEdit)),
               upload_bytes = align_up(bias_at + b.bias.size() * sizeof(float));
  std::vector<unsigned char> packed(upload_bytes);
  std::memcpy(packed.data() + rows_at, dev_rows.data(), dev_rows.size() * sizeof(RowDev));
  if (!b.edits.empty())
    std::memcpy(packed.data() + edits_at, b.edits.data(), b.edits.size() * sizeof(SampleTokenEdit));
  if (!b.bias.empty())
    std::memcpy(packed.data() + bias_at, b.bias.data(), b.bias.size() * sizeof(float));

  const unsigned char* up = upload_indices(st, packed);
  // Work: the f32 rows, then the results (copied back in one piece).
  const size_t out_at = align_up(size_t(rows * vocab) * sizeof(float)),
               id_at = out_at + align_up(size_t(rows) * sizeof(OutRow)),
               lp_at = id_at + align_up(num_top * sizeof(int32_t)),
               end = lp_at + align_up(num_top * sizeof(float));
  char* work = static_cast<char*>(scratch(st, kWorkScratch, end));
  Args a{static_cast<const char*>(logits.data),
         logits.dtype,
         logits.row_stride * int64_t(dtype_size(logits.dtype)),
         vocab,
         reinterpret_cast<float*>(work),
         reinterpret_cast<const RowDev*>(up + rows_at),
         reinterpret_cast<const SampleTokenEdit*>(up + edits_at),
         reinterpret_cast<const float*>(up + bias_at),
         b.processed_logprobs,
         reinterpret_cast<OutRow*>(work + out_at),
         reinterpret_cast<int32_t*>(work + id_at),
         reinterpret_cast<float*>(work + lp_at)};
  sample_kernel<<<unsigned(rows), kThreads, 0, st.stream>>>(a);
  VT_CUDA_CHECK_LAUNCH("sample_kernel");
  std::vector<unsigned char> back(end - out_at);
  VT_CUDA_CHECK(cudaMemcpyAsync(back.data(), work + out_at, back.size(), cudaMemcpyDeviceToHost,
                                st.stream));
  VT_CUDA_CHECK(cudaStreamSynchronize(st.stream));

  const auto* out = reinterpret_cast<const OutRow*>(back.data());
  for (int64_t r = 0; r < rows; ++r) {
    VT_CHECK(out[r].error == 0, "sample: every token of the row is masked (row ", r, ")");
    o.token.push_back(out[r].token);
    o.logprob.push_back(out[r].logprob);
    o.rank.push_back(out[r].rank);
  }
  o.top_token.resize(num_top);
  o.top_logprob.resize(num_top);
  if (num_top) {
    std::memcpy(o.top_token.data(), back.data() + (id_at - out_at), num_top * sizeof(int32_t));
    std::memcpy(o.top_logprob.data(), back.data() + (lp_at - out_at), num_top * sizeof(float));
  }
  return o;
}

}  // namespace vt::cuda
