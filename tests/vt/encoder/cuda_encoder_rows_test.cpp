// The CUDA row ops of vt/ops/encoder.h (layer_norm, gelu, weighted_gather; arms in
// vt/cuda/encoder.h) against double-precision references computed here on random
// inputs, over the kernels' layouts: 16-byte rows and the scalar path (odd widths), rows
// held in registers and walked span by span (past 16384 columns), two-level row views
// (per-head views of a column slice), in place. Skipped without a GPU.
//
// Tolerances: each op computes in f32 and rounds once, so against the exact value a
// bf16 output is off by at most half an ulp (2^-8 relative) plus the f32 evaluation's
// error (a few 2^-24 of the row's scale); f32 outputs by the latter only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "vt/ops/copy.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/encoder.h"
#endif

namespace vt {
namespace {

#if VTLLM_WITH_CUDA

using cudatest::expect_close;
using cudatest::randn;
using cudatest::Streams;

constexpr double kBf16Half = 1.0 / 256 * 1.001;  // half a bf16 ulp, relative, and slack

std::vector<float> values(Stream& cpu, const Tensor& t) {
  Tensor f = to_dtype(cpu, contiguous(cpu, t), DType::kF32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

Tensor f32_tensor(const Shape& shape, const std::vector<double>& v) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = float(v[i]);
  return t;
}

// LayerNorm of the [rows, cols] values x in double (biased variance).
std::vector<double> layer_norm_ref(const std::vector<float>& x, const std::vector<float>& w,
                                   const std::vector<float>& b, int64_t rows, int64_t cols,
                                   double eps) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x[size_t(r * cols + c)];
    mean /= double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const double d = x[size_t(r * cols + c)] - mean;
      var += d * d;
    }
    const double rstd = 1.0 / std::sqrt(var / double(cols) + eps);
    for (int64_t c = 0; c < cols; ++c)
      out[size_t(r * cols + c)] =
          (x[size_t(r * cols + c)] - mean) * rstd * w[size_t(c)] + b[size_t(c)];
  }
  return out;
}

struct LnCase {
  DType x, w, out;
  int64_t rows, cols;
  float mean;  // added to every x: the variance must not cancel
};

TEST(CudaLayerNorm, MatchesDoubleReference) {
  VT_REQUIRE_GPU();
  Streams s;
  const LnCase cases[] = {
      {DType::kBF16, DType::kBF16, DType::kBF16, 37, 1152,
       0.0f},                                                     // the tower's width, 16-byte rows
      {DType::kBF16, DType::kBF16, DType::kBF16, 5, 4608, 3.0f},  // the merger's 4 x 1152
      {DType::kF32, DType::kF32, DType::kF32, 9, 1153, 50.0f},    // odd: scalar path
      {DType::kF16, DType::kBF16, DType::kF32, 4, 100, -2.0f},    // mixed dtypes
      {DType::kF32, DType::kF32, DType::kF32, 3, 12000, 10.0f},   // two chunks per thread
      {DType::kF32, DType::kF32, DType::kF32, 2, 40001, 10.0f},   // walked span by span
      {DType::kBF16, DType::kF32, DType::kBF16, 3, 1, 0.0f},      // one column: out = b
  };
  for (const LnCase& c : cases) {
    const std::string what = std::string(dtype_name(c.x)) + " [" + std::to_string(c.rows) + ", " +
                             std::to_string(c.cols) + "]";
    Tensor xf = randn({c.rows, c.cols}, DType::kF32, 1.5, uint64_t(c.cols));
    for (int64_t i = 0; i < xf.numel(); ++i) xf.data<float>()[i] += c.mean;
    Tensor x = to_dtype(s.cpu, xf, c.x);
    Tensor w = randn({c.cols}, c.w, 1.0, 5), b = randn({c.cols}, c.w, 0.5, 6);
    const std::vector<double> ref =
        layer_norm_ref(values(s.cpu, x), values(s.cpu, w), values(s.cpu, b), c.rows, c.cols, 1e-6);
    Tensor xg = s.up(x), wg = s.up(w), bg = s.up(b);
    Tensor out = cudatest::poisoned_gpu(s, {c.rows, c.cols}, c.out);
    cuda::layer_norm(s.gpu, rows_view(xg, "test", "x"), wg, bg, 1e-6f,
                     rows_view(out, "test", "out"));
    // The f32 sum of cols values near `mean` is off by a few half-ulps of the running
    // totals (per-thread serial sums of <= 40 elements, then warp trees and a serial sum
    // of <= 32 warp totals): ~1e-7 of |mean| for these means and widths, which rstd
    // carries into out, well inside 2e-5 of its rms. (A serial sum over the whole row, as
    // the CPU arm's, is off by up to 4x that allowance at [9, 1153] of mean 50.)
    expect_close(s, f32_tensor({c.rows, c.cols}, ref), out, c.out == DType::kF32 ? 1e-5 : kBf16Half,
                 2e-5, what);
  }
}

TEST(CudaLayerNorm, TwoLevelRowsAndInPlace) {
  VT_REQUIRE_GPU();
  Streams s;
  // x: a [T, H, D] per-head view of columns [24, 24 + H D) of [T, W]; normalised in place.
  const int64_t T = 11, H = 4, D = 72, W = H * D + 40;
  Tensor wide = randn({T, W}, DType::kBF16, 2.0, 21);
  Tensor w = randn({D}, DType::kBF16, 1.0, 22), b = randn({D}, DType::kBF16, 1.0, 23);
  auto heads = [&](const Tensor& t) { return t.slice(1, 24, 24 + H * D).reshape({T, H, D}); };
  const std::vector<double> ref = layer_norm_ref(values(s.cpu, heads(wide)), values(s.cpu, w),
                                                 values(s.cpu, b), T * H, D, 1e-5);
  Tensor wide_g = s.up(wide), wg = s.up(w), bg = s.up(b);
  Tensor xg = heads(wide_g);
  const Rows rows = rows_view(xg, "test", "x");
  ASSERT_FALSE(rows.one_level());
  cuda::layer_norm(s.gpu, rows, wg, bg, 1e-5f, rows);
  Tensor back = s.down(wide_g);
  expect_close(s, f32_tensor({T, H, D}, ref), heads(back), kBf16Half, 2e-5, "two-level in place");
  const std::vector<float> before = values(s.cpu, wide), after = values(s.cpu, back);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < W; ++j) {
      if (j < 24 || j >= 24 + H * D) {
        ASSERT_EQ(before[size_t(t * W + j)], after[size_t(t * W + j)]) << "column " << j;
      }
    }
  }
}

double gelu_ref(double x, GeluKind kind) {
  if (kind == GeluKind::kTanh)
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

TEST(CudaGelu, BothFormsMatchDoubleReference) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Case {
    DType x, out;
    int64_t rows, cols;
  };
  // 4304: the tower's MLP width (16-byte path); 4608: the merger's; 999: scalar path.
  const Case cases[] = {{DType::kBF16, DType::kBF16, 64, 4304},
                        {DType::kBF16, DType::kBF16, 7, 4608},
                        {DType::kF32, DType::kF32, 13, 999},
                        {DType::kF16, DType::kF32, 5, 4304}};
  for (GeluKind kind : {GeluKind::kTanh, GeluKind::kErf}) {
    for (const Case& c : cases) {
      const std::string what = std::string(kind == GeluKind::kTanh ? "tanh " : "erf ") +
                               dtype_name(c.x) + " -> " + dtype_name(c.out) + " cols " +
                               std::to_string(c.cols);
      Tensor x = randn({c.rows, c.cols}, c.x, 2.5, uint64_t(c.cols) + 1);
      const std::vector<float> xv = values(s.cpu, x);
      std::vector<double> ref(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) ref[i] = gelu_ref(xv[i], kind);
      Tensor out = cudatest::poisoned_gpu(s, {c.rows, c.cols}, c.out);
      Tensor xg = s.up(x);
      cuda::gelu(s.gpu, rows_view(xg, "test", "x"), kind, rows_view(out, "test", "out"));
      // 1 + tanh(z) cancels for negative x: tanhf's ulp of 1 (6e-8) becomes relative
      // error there, absolute ~ 3e-8 |x|, well inside 1e-6 of the outputs' rms.
      expect_close(s, f32_tensor({c.rows, c.cols}, ref), out,
                   c.out == DType::kF32 ? 1e-5 : kBf16Half, 1e-6, what);
    }
  }
}

TEST(CudaGelu, TwoLevelRowsInPlace) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t T = 9, H = 3, D = 40, W = H * D + 16;
  Tensor wide = randn({T, W}, DType::kBF16, 2.0, 31);
  auto heads = [&](const Tensor& t) { return t.slice(1, 8, 8 + H * D).reshape({T, H, D}); };
  const std::vector<float> xv = values(s.cpu, heads(wide));
  std::vector<double> ref(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) ref[i] = gelu_ref(xv[i], GeluKind::kTanh);
  Tensor wide_g = s.up(wide);
  Tensor xg = heads(wide_g);
  const Rows rows = rows_view(xg, "test", "x");
  ASSERT_FALSE(rows.one_level());
  cuda::gelu(s.gpu, rows, GeluKind::kTanh, rows);
  Tensor back = s.down(wide_g);
  expect_close(s, f32_tensor({T, H, D}, ref), heads(back), kBf16Half, 1e-6, "two-level gelu");
  const std::vector<float> before = values(s.cpu, wide), after = values(s.cpu, back);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < W; ++j) {
      if (j < 8 || j >= 8 + H * D) {
        ASSERT_EQ(before[size_t(t * W + j)], after[size_t(t * W + j)]) << "column " << j;
      }
    }
  }
}

// weighted_gather's contract fixes every f32 operation (products, then sums in k order,
// each rounded to f32, no FMA), so the test emulates it exactly on the host and demands
// equal bits; the double reference bounds the emulation itself.
TEST(CudaWeightedGather, EqualsTheF32OperationsBitForBit) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Case {
    DType table, out;
    int64_t v, d, n, k;
  };
  // The tower's bilinear lookup: a [2304, 1152] bf16 table, 4 taps; odd widths, f32.
  const Case cases[] = {{DType::kBF16, DType::kBF16, 2304, 1152, 4096, 4},
                        {DType::kF32, DType::kF32, 50, 37, 100, 3},
                        {DType::kBF16, DType::kF32, 10, 20000, 3, 4},
                        {DType::kF16, DType::kBF16, 64, 72, 33, 1}};
  for (const Case& c : cases) {
    const std::string what = std::string(dtype_name(c.table)) + " D " + std::to_string(c.d);
    Tensor table = randn({c.v, c.d}, c.table, 1.0, uint64_t(c.d));
    Tensor idx = Tensor::empty({c.n, c.k}, DType::kI32);
    Tensor wt = cudatest::uniform({c.n, c.k}, 0.0f, 1.0f, uint64_t(c.n));
    std::mt19937 rng(7);
    for (int64_t i = 0; i < idx.numel(); ++i)
      idx.data<int32_t>()[i] = int32_t(rng() % uint64_t(c.v));
    const std::vector<float> tv = values(s.cpu, table);
    Tensor emul = Tensor::empty({c.n, c.d}, DType::kF32);
    std::vector<double> ref(size_t(c.n * c.d));
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t j = 0; j < c.d; ++j) {
        volatile float acc = 0.0f;  // volatile: no FMA contraction on the host either
        double exact = 0;
        for (int64_t k = 0; k < c.k; ++k) {
          const int32_t i = idx.data<int32_t>()[n * c.k + k];
          const float w = wt.data<float>()[n * c.k + k];
          volatile float prod = tv[size_t(i * c.d + j)] * w;
          acc = acc + prod;
          exact += double(tv[size_t(i * c.d + j)]) * w;
        }
        emul.data<float>()[n * c.d + j] = acc;
        ref[size_t(n * c.d + j)] = exact;
      }
    Tensor want = to_dtype(s.cpu, emul, c.out);
    Tensor out = cudatest::poisoned_gpu(s, {c.n, c.d}, c.out);
    Tensor tg = s.up(table);
    cuda::weighted_gather(s.gpu, rows_view(tg, "test", "table"), s.up(idx), s.up(wt), out);
    Tensor got = s.down(out);
    ASSERT_EQ(got.nbytes(), want.nbytes());
    EXPECT_EQ(std::memcmp(got.data_ptr(), want.data_ptr(), want.nbytes()), 0) << what;
    expect_close(s, f32_tensor({c.n, c.d}, ref), emul, 1e-6, 1e-6, what + " (emulation)");
  }
}

#endif  // VTLLM_WITH_CUDA

}  // namespace
}  // namespace vt
