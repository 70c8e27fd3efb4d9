// CPU reference of the sparse MoE ops (vt/ops/moe.h): f32 compute, rounded to the
// activation dtype at the oracle's rounding points (qwen3_5.md §9.2). Each token is
// computed on its own, one thread per block of tokens, so results never depend on
// which other tokens share the call.
#include "vt/cpu/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "vt/cpu/rounding.h"
#include "vt/cpu/rowio.h"

namespace vt::cpu {

void moe_route(Stream& s, const Rows& logits, int64_t k, const Tensor& topk_ids,
               const Tensor& topk_weights) {
  const int64_t n_experts = logits.cols;
  const DType wdt = topk_weights.dtype();
  const size_t wsize = dtype_size(wdt);
  int32_t* ids = topk_ids.data<int32_t>();
  char* weights = static_cast<char*>(topk_weights.data_ptr());
  s.parallel_for(logits.rows, std::max<int64_t>(1, 4096 / n_experts), [&](int64_t t0, int64_t t1) {
    std::vector<float> p(static_cast<size_t>(n_experts)), w(static_cast<size_t>(k));
    std::vector<int32_t> order(static_cast<size_t>(n_experts));
    for (int64_t t = t0; t < t1; ++t) {
      load_row(logits.row(t), logits.dtype, n_experts, p.data());
      // softmax over all E in f32, max-subtracted (torch.softmax(dtype=float)).
      const float mx = *std::max_element(p.begin(), p.end());
      float sum = 0.0f;
      for (float& v : p) sum += (v = std::exp(v - mx));
      for (float& v : p) v /= sum;
      // The k largest; equal probabilities keep the lower expert index first.
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
        return p[size_t(a)] > p[size_t(b)] || (p[size_t(a)] == p[size_t(b)] && a < b);
      });
      float top_sum = 0.0f;
      for (int64_t j = 0; j < k; ++j) top_sum += p[size_t(order[size_t(j)])];
      for (int64_t j = 0; j < k; ++j) {
        ids[t * k + j] = order[size_t(j)];
        w[size_t(j)] = p[size_t(order[size_t(j)])] / top_sum;
      }
      store_row(w.data(), k, wdt, weights + size_t(t * k) * wsize);
    }
  });
}

namespace {

// y[r] = sum_c x[c] * W[r, c] for r < rows, f32 in c order; W rows widened a row at a time.
void matvec(const float* x, const char* w, DType wdt, int64_t rows, int64_t cols, float* wrow,
            float* y) {
  const size_t row_bytes = size_t(cols) * dtype_size(wdt);
  for (int64_t r = 0; r < rows; ++r) {
    load_row(w + size_t(r) * row_bytes, wdt, cols, wrow);
    float acc = 0.0f;
    for (int64_t c = 0; c < cols; ++c) acc += x[c] * wrow[c];
    y[r] = acc;
  }
}

}  // namespace

void moe_experts(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                 const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& out) {
  const int64_t T = x.size(0), H = x.size(1), I = down.size(2), k = topk_ids.size(1);
  const DType adt = out.dtype();
  const size_t x_row = size_t(H) * x.itemsize(), out_row = size_t(H) * out.itemsize();
  const size_t gu_expert = size_t(2 * I * H) * gate_up.itemsize();
  const size_t down_expert = size_t(H * I) * down.itemsize();
  const char* xp = static_cast<const char*>(x.data_ptr());
  const char* gup = static_cast<const char*>(gate_up.data_ptr());
  const char* dp = static_cast<const char*>(down.data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const int32_t* ids = topk_ids.data<int32_t>();
  // Per-token work is k * 3 * I * H multiply-adds: one token per chunk is grain enough.
  s.parallel_for(T, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> xf(static_cast<size_t>(H)), gu(static_cast<size_t>(2 * I)),
        hid(static_cast<size_t>(I)), d(static_cast<size_t>(H)), acc(static_cast<size_t>(H)),
        wrow(static_cast<size_t>(std::max(H, I))), w(static_cast<size_t>(k));
    for (int64_t t = t0; t < t1; ++t) {
      load_row(xp + size_t(t) * x_row, x.dtype(), H, xf.data());
      load_row(static_cast<const char*>(topk_weights.data_ptr()) +
                   size_t(t * k) * topk_weights.itemsize(),
               topk_weights.dtype(), k, w.data());
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t e = ids[t * k + j];
        matvec(xf.data(), gup + size_t(e) * gu_expert, gate_up.dtype(), 2 * I, H, wrow.data(),
               gu.data());
        for (float& v : gu) v = round_to(v, adt);
        for (int64_t i = 0; i < I; ++i) {
          const float g = gu[size_t(i)];
          hid[size_t(i)] =
              round_to(round_to(g / (1.0f + std::exp(-g)), adt) * gu[size_t(I + i)], adt);
        }
        matvec(hid.data(), dp + size_t(e) * down_expert, down.dtype(), H, I, wrow.data(), d.data());
        for (int64_t h = 0; h < H; ++h)
          acc[size_t(h)] += round_to(round_to(d[size_t(h)], adt) * w[size_t(j)], adt);
      }
      store_row(acc.data(), H, adt, op + size_t(t) * out_row);
    }
  });
}

}  // namespace vt::cpu
