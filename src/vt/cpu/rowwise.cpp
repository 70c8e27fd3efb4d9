// CPU reference kernels of the row-wise ops: norms, activations, softmax,
// elementwise arithmetic. Each row is widened to f32, computed, stored once.
#include <algorithm>
#include <cmath>
#include <vector>

#include "vt/cpu/kernels.h"
#include "vt/cpu/rounding.h"
#include "vt/cpu/rowio.h"

namespace vt::cpu {

namespace {

// Rows per parallel_for chunk so that each chunk does ~16K elements of work.
int64_t grain_for(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)); }

// Runs fn(r, in_buf, out_buf) for every row with two f32 scratch rows of `width`.
template <class F>
void for_rows(Stream& s, int64_t rows, int64_t cols, int64_t width, F&& fn) {
  s.parallel_for(rows, grain_for(cols), [&](int64_t r0, int64_t r1) {
    std::vector<float> a(static_cast<size_t>(width)), b(static_cast<size_t>(width));
    for (int64_t r = r0; r < r1; ++r) fn(r, a.data(), b.data());
  });
}

}  // namespace

void rms_norm(Stream& s, const Rows& x, const Tensor& w, float eps, RmsNormKind kind, const Rows& out) {
  const int64_t d = x.cols;
  std::vector<float> wf(static_cast<size_t>(d));
  load_row(w.data_ptr(), w.dtype(), d, wf.data());
  if (kind == RmsNormKind::kOnePlus)
    for (float& v : wf) v += 1.0f;
  for_rows(s, x.rows, d, d, [&](int64_t r, float* a, float*) {
    load_row(x.row(r), x.dtype, d, a);
    float ss = 0.0f;
    for (int64_t i = 0; i < d; ++i) ss += a[i] * a[i];
    float inv = 1.0f / std::sqrt(ss / float(d) + eps);
    if (kind == RmsNormKind::kPlain && is_narrow(out.dtype)) {
      // Qwen3RMSNorm: the normalised value rounds before the weight multiply.
      for (int64_t i = 0; i < d; ++i) a[i] = round_to(a[i] * inv, out.dtype) * wf[size_t(i)];
    } else {
      for (int64_t i = 0; i < d; ++i) a[i] = a[i] * inv * wf[size_t(i)];
    }
    store_row(a, d, out.dtype, out.row(r));
  });
}

void l2_normalize(Stream& s, const Rows& x, float eps, const Rows& out) {
  const int64_t d = x.cols;
  for_rows(s, x.rows, d, d, [&](int64_t r, float* a, float*) {
    load_row(x.row(r), x.dtype, d, a);
    float ss = 0.0f;
    for (int64_t i = 0; i < d; ++i) ss += a[i] * a[i];
    float inv = 1.0f / std::sqrt(ss + eps);
    for (int64_t i = 0; i < d; ++i) a[i] *= inv;
    store_row(a, d, out.dtype, out.row(r));
  });
}

void silu_and_mul(Stream& s, const Rows& x, const Rows& out) {
  const int64_t n = out.cols;
  for_rows(s, x.rows, x.cols, x.cols, [&](int64_t r, float* a, float*) {
    load_row(x.row(r), x.dtype, x.cols, a);
    for (int64_t i = 0; i < n; ++i) {
      float g = a[i];
      // silu(g) rounds to the output dtype before the product (a no-op for f32).
      a[i] = round_to(g / (1.0f + std::exp(-g)), out.dtype) * a[i + n];
    }
    store_row(a, n, out.dtype, out.row(r));
  });
}

void sigmoid(Stream& s, const Rows& x, const Rows& out) {
  const int64_t d = x.cols;
  for_rows(s, x.rows, d, d, [&](int64_t r, float* a, float*) {
    load_row(x.row(r), x.dtype, d, a);
    for (int64_t i = 0; i < d; ++i) a[i] = 1.0f / (1.0f + std::exp(-a[i]));
    store_row(a, d, out.dtype, out.row(r));
  });
}

void softmax(Stream& s, const Rows& x, const Rows& out) {
  const int64_t d = x.cols;
  for_rows(s, x.rows, d, d, [&](int64_t r, float* a, float*) {
    load_row(x.row(r), x.dtype, d, a);
    float mx = -INFINITY;
    for (int64_t i = 0; i < d; ++i) mx = std::max(mx, a[i]);
    float sum = 0.0f;
    for (int64_t i = 0; i < d; ++i) sum += (a[i] = std::exp(a[i] - mx));
    float inv = 1.0f / sum;
    for (int64_t i = 0; i < d; ++i) a[i] *= inv;
    store_row(a, d, out.dtype, out.row(r));
  });
}

void binary(Stream& s, Binary op, const Rows& a, const Rows& b, const Rows& out) {
  const int64_t d = a.cols;
  for_rows(s, a.rows, d, d, [&](int64_t r, float* x, float* y) {
    load_row(a.row(r), a.dtype, d, x);
    load_row(b.row(r), b.dtype, d, y);
    if (op == Binary::kAdd) {
      for (int64_t i = 0; i < d; ++i) x[i] += y[i];
    } else {
      for (int64_t i = 0; i < d; ++i) x[i] *= y[i];
    }
    store_row(x, d, out.dtype, out.row(r));
  });
}

}  // namespace vt::cpu
