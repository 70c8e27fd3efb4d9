// The encoder ops' CPU arms (vt/ops/encoder.h) against double-precision references on
// random inputs: poisoned outputs, odd sizes, strided views, f32 and bf16 in and out,
// head_dim 72 and odd ones; argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "vt/ops/activation.h"
#include "vt/ops/copy.h"
#include "vt/ops/encoder.h"
#include "vt/ops/gemm.h"

namespace vt {
namespace {

using cudatest::randn;

// The elements of t (any layout, any float dtype) as doubles in row-major order.
std::vector<double> values(const Tensor& t) {
  Stream s(Device::cpu(), 1);
  Tensor f = to_dtype(s, contiguous(s, t), DType::kF32);
  return {f.data<float>(), f.data<float>() + f.numel()};
}

// An output filled with 0xff bytes (NaN in every float dtype): a skipped element shows.
Tensor poisoned(const Shape& shape, DType dt) {
  Tensor t = Tensor::empty(shape, dt);
  std::memset(t.data_ptr(), 0xff, t.nbytes());
  return t;
}

// f32 out: the f32 computation differs from double by summation-order rounding only.
// bf16 out: one rounding of a value that itself carries f32 error: one bf16 ulp.
double rel_tol(DType out) { return out == DType::kF32 ? 2e-5 : 1.0 / 128; }

void expect_near_all(const std::vector<double>& want, const Tensor& got, double rel, double abs,
                     const std::string& what) {
  const std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool ok =
        std::isfinite(g[i]) && std::fabs(g[i] - want[i]) <= rel * std::fabs(want[i]) + abs;
    if (!ok && bad++ == 0) first = int64_t(i);
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << g.size() << " elements off; first at "
                    << first << ": want " << (first >= 0 ? want[size_t(first)] : 0) << " got "
                    << (first >= 0 ? g[size_t(first)] : 0);
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << part << "'";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(EncoderOps, LayerNormMatchesDoubleOnStridedViews) {
  Stream s(Device::cpu(), 2);
  uint64_t seed = 100;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (DType odt : {DType::kF32, DType::kBF16})
      for (int64_t d : {1, 7, 48, 1000}) {
        const int64_t rows = 13;
        // x is a column slice of a wider matrix with an offset mean (a shifted LayerNorm
        // input: the two-pass variance matters).
        Tensor wide = randn({rows, d + 5}, dt, 3.0, seed++);
        Tensor x = wide.slice(1, 2, 2 + d);
        const Tensor w = randn({d}, DType::kBF16, 1.0, seed++);
        const Tensor b = randn({d}, DType::kF32, 0.5, seed++);
        Tensor out = poisoned({rows, d}, odt);
        layer_norm(s, x, w, b, 1e-6f, out);
        const std::vector<double> xv = values(x), wv = values(w), bv = values(b);
        std::vector<double> want(xv.size());
        for (int64_t r = 0; r < rows; ++r) {
          double mean = 0, var = 0;
          for (int64_t i = 0; i < d; ++i) mean += xv[size_t(r * d + i)];
          mean /= double(d);
          for (int64_t i = 0; i < d; ++i) var += std::pow(xv[size_t(r * d + i)] - mean, 2);
          var /= double(d);
          for (int64_t i = 0; i < d; ++i)
            want[size_t(r * d + i)] =
                (xv[size_t(r * d + i)] - mean) / std::sqrt(var + 1e-6) * wv[size_t(i)] +
                bv[size_t(i)];
        }
        expect_near_all(want, out, rel_tol(odt), 1e-5,
                        std::string("layer_norm ") + dtype_name(dt) + "->" + dtype_name(odt) +
                            " d " + std::to_string(d));
      }
}

TEST(EncoderOps, LayerNormInPlace) {
  Stream s(Device::cpu(), 1);
  Tensor x = randn({4, 33}, DType::kBF16, 2.0, 7);
  const std::vector<double> xv = values(x);
  const Tensor w = randn({33}, DType::kBF16, 1.0, 8), b = randn({33}, DType::kBF16, 1.0, 9);
  Tensor ref = poisoned({4, 33}, DType::kBF16);
  layer_norm(s, x, w, b, 1e-6f, ref);
  layer_norm(s, x, w, b, 1e-6f, x);
  EXPECT_EQ(std::memcmp(x.data_ptr(), ref.data_ptr(), x.nbytes()), 0);
  EXPECT_NE(values(x), xv);
}

TEST(EncoderOps, AddLayerNormEqualsAddThenLayerNorm) {
  Stream s(Device::cpu(), 2);
  uint64_t seed = 150;
  for (DType hdt : {DType::kF32, DType::kBF16})
    for (DType rdt : {DType::kF32, DType::kBF16})
      for (int64_t d : {1, 7, 1152}) {
        const int64_t rows = 11;
        Tensor wide = randn({rows, d + 3}, rdt, 2.0, seed++);
        const Tensor r = wide.slice(1, 1, 1 + d);  // rows of stride d + 3
        const Tensor h0 = randn({rows, d}, hdt, 3.0, seed++);
        const Tensor w = randn({d}, DType::kBF16, 1.0, seed++);
        const Tensor b = randn({d}, DType::kF32, 0.5, seed++);
        Tensor h_ref = Tensor::empty({rows, d}, hdt), out_ref = poisoned({rows, d}, DType::kBF16);
        copy(s, h0, h_ref);
        add(s, h_ref, r, h_ref);
        layer_norm(s, h_ref, w, b, 1e-6f, out_ref);
        Tensor h = Tensor::empty({rows, d}, hdt), out = poisoned({rows, d}, DType::kBF16);
        copy(s, h0, h);
        add_layer_norm(s, h, r, w, b, 1e-6f, out);
        const std::string what = std::string("add_layer_norm h ") + dtype_name(hdt) + " r " +
                                 dtype_name(rdt) + " d " + std::to_string(d);
        EXPECT_EQ(std::memcmp(h.data_ptr(), h_ref.data_ptr(), h.nbytes()), 0) << what;
        EXPECT_EQ(std::memcmp(out.data_ptr(), out_ref.data_ptr(), out.nbytes()), 0) << what;
      }
  // r may be h itself: h = 2 h.
  Tensor h = randn({3, 40}, DType::kBF16, 1.0, 160);
  const std::vector<double> hv = values(h);
  const Tensor w = randn({40}, DType::kBF16, 1.0, 161), b = randn({40}, DType::kBF16, 1.0, 162);
  Tensor out = poisoned({3, 40}, DType::kBF16);
  add_layer_norm(s, h, h, w, b, 1e-6f, out);
  std::vector<double> twice = hv;
  for (double& v : twice) v *= 2;
  EXPECT_EQ(values(h), twice);
}

TEST(EncoderOps, AddLayerNormRejectsOverlaps) {
  Stream s(Device::cpu(), 1);
  Tensor h = randn({4, 16}, DType::kBF16, 1.0, 170), r = randn({4, 16}, DType::kBF16, 1.0, 171);
  const Tensor w = randn({16}, DType::kBF16, 1.0, 172), b = randn({16}, DType::kBF16, 1.0, 173);
  expect_error([&] { add_layer_norm(s, h, r, w, b, 1e-6f, h); }, "add_layer_norm");
  expect_error([&] { add_layer_norm(s, h, r, w, b, 1e-6f, r); }, "add_layer_norm");
  Tensor short_r = randn({4, 15}, DType::kBF16, 1.0, 174), out = poisoned({4, 16}, DType::kBF16);
  expect_error([&] { add_layer_norm(s, h, short_r, w, b, 1e-6f, out); }, "r");
}

TEST(EncoderOps, GeluBothKindsMatchDouble) {
  Stream s(Device::cpu(), 2);
  uint64_t seed = 200;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (DType odt : {DType::kF32, DType::kBF16})
      for (GeluKind kind : {GeluKind::kTanh, GeluKind::kErf}) {
        Tensor wide = randn({9, 131}, dt, 3.0, seed++);
        Tensor x = wide.slice(1, 0, 77);  // rows of stride 131
        Tensor out = poisoned({9, 77}, odt);
        gelu(s, x, kind, out);
        std::vector<double> want = values(x);
        for (double& v : want)
          v = kind == GeluKind::kTanh
                  ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))
                  : 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
        expect_near_all(want, out, rel_tol(odt), 1e-6,
                        std::string("gelu ") + (kind == GeluKind::kTanh ? "tanh " : "erf ") +
                            dtype_name(dt) + "->" + dtype_name(odt));
      }
}

TEST(EncoderOps, GeluKindsDiffer) {
  // The two formulas differ by ~1e-3 near |x| = 2: a swapped kind shows.
  Stream s(Device::cpu(), 1);
  Tensor x = randn({1, 256}, DType::kF32, 2.0, 5);
  Tensor a = poisoned({1, 256}, DType::kF32), b = poisoned({1, 256}, DType::kF32);
  gelu(s, x, GeluKind::kTanh, a);
  gelu(s, x, GeluKind::kErf, b);
  double diff = 0;
  const auto av = values(a), bv = values(b);
  for (size_t i = 0; i < av.size(); ++i) diff = std::max(diff, std::fabs(av[i] - bv[i]));
  EXPECT_GT(diff, 1e-4);
}

TEST(EncoderOps, LinearGeluMatchesDoubleWithOneRounding) {
  Stream s(Device::cpu(), 2);
  uint64_t seed = 180;
  const int64_t m = 6, k = 40, n = 19;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (DType odt : {DType::kF32, DType::kBF16})
      for (GeluKind kind : {GeluKind::kTanh, GeluKind::kErf})
        for (bool with_bias : {true, false}) {
          const Tensor x = randn({m, k}, dt, 1.0, seed++);
          const Tensor w = randn({n, k}, dt, 0.3, seed++);
          const Tensor bias = with_bias ? randn({n}, DType::kF32, 1.0, seed++) : Tensor();
          Tensor out = poisoned({m, n}, odt);
          linear_gelu(s, x, w, bias, kind, out);
          const std::vector<double> xv = values(x), wv = values(w);
          const std::vector<double> bv = with_bias ? values(bias) : std::vector<double>(n, 0.0);
          std::vector<double> want(size_t(m * n));
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double v = bv[size_t(j)];
              for (int64_t c = 0; c < k; ++c) v += xv[size_t(i * k + c)] * wv[size_t(j * k + c)];
              want[size_t(i * n + j)] =
                  kind == GeluKind::kTanh
                      ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))
                      : 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
            }
          // bf16 out: one rounding (half an ulp) of the f32 value, not two.
          expect_near_all(want, out, odt == DType::kF32 ? 2e-5 : 1.0 / 256, 1e-5,
                          std::string("linear_gelu ") + dtype_name(dt) + "->" + dtype_name(odt) +
                              (kind == GeluKind::kTanh ? " tanh" : " erf") +
                              (with_bias ? " bias" : ""));
        }
}

TEST(EncoderOps, WeightedGatherMatchesDouble) {
  Stream s(Device::cpu(), 2);
  uint64_t seed = 300;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (DType odt : {DType::kF32, DType::kBF16}) {
      const int64_t v = 37, d = 45, n = 29, taps = 4;
      Tensor wide = randn({v, d + 3}, dt, 1.0, seed++);
      Tensor table = wide.slice(1, 3, 3 + d);
      Tensor idx = Tensor::empty({n, taps}, DType::kI32);
      Tensor weight = cudatest::uniform({n, taps}, 0.0f, 1.0f, seed++);
      std::mt19937 rng(unsigned(seed++));
      for (int64_t i = 0; i < n * taps; ++i) idx.data<int32_t>()[i] = int32_t(rng() % v);
      Tensor out = poisoned({n, d}, odt);
      weighted_gather(s, table, idx, weight, out);
      const std::vector<double> tv = values(table);
      std::vector<double> want(size_t(n * d), 0.0);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t k = 0; k < taps; ++k)
          for (int64_t c = 0; c < d; ++c)
            want[size_t(r * d + c)] += tv[size_t(idx.data<int32_t>()[r * taps + k] * d + c)] *
                                       double(weight.data<float>()[r * taps + k]);
      expect_near_all(want, out, rel_tol(odt), 1e-5,
                      std::string("weighted_gather ") + dtype_name(dt) + "->" + dtype_name(odt));
    }
}

TEST(EncoderOps, WeightedGatherRejectsBadArguments) {
  Stream s(Device::cpu(), 1);
  Tensor table = randn({5, 8}, DType::kF32, 1.0, 1);
  Tensor idx = cudatest::i32({0, 1, 2, 5});
  idx = idx.view({2, 2});
  Tensor weight = cudatest::uniform({2, 2}, 0.0f, 1.0f, 2);
  Tensor out = Tensor::empty({2, 8}, DType::kF32);
  expect_error([&] { weighted_gather(s, table, idx, weight, out); }, "idx[1, 1] = 5");
  Tensor bad_out = Tensor::empty({2, 7}, DType::kF32);
  expect_error([&] { weighted_gather(s, table, idx, weight, bad_out); }, "out");
}

// Double-precision segment attention over row-major [N, H, D] values.
std::vector<double> segment_attention_ref(const std::vector<double>& q,
                                          const std::vector<double>& k,
                                          const std::vector<double>& v, int64_t heads, int64_t hd,
                                          const std::vector<int32_t>& cu, double scale) {
  std::vector<double> out(q.size(), 0.0);
  for (size_t sg = 0; sg + 1 < cu.size(); ++sg)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = cu[sg]; t < cu[sg + 1]; ++t) {
        std::vector<double> p;
        double mx = -INFINITY;
        for (int64_t j = cu[sg]; j < cu[sg + 1]; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < hd; ++c)
            dot += q[size_t((t * heads + h) * hd + c)] * k[size_t((j * heads + h) * hd + c)];
          p.push_back(dot * scale);
          mx = std::max(mx, p.back());
        }
        double sum = 0;
        for (double& x : p) sum += (x = std::exp(x - mx));
        for (int64_t j = cu[sg]; j < cu[sg + 1]; ++j)
          for (int64_t c = 0; c < hd; ++c)
            out[size_t((t * heads + h) * hd + c)] +=
                p[size_t(j - cu[sg])] / sum * v[size_t((j * heads + h) * hd + c)];
      }
  return out;
}

TEST(EncoderOps, SegmentAttentionMatchesDoubleOnFusedQkvViews) {
  Stream s(Device::cpu(), 2);
  uint64_t seed = 400;
  struct Case {
    int64_t heads, hd;
    std::vector<int32_t> cu;
  };
  // An empty segment, a single-token one, one longer than the CPU arm's query block.
  const Case cases[] = {{3, 16, {0, 20, 20, 21, 100}},
                        {2, 72, {0, 70, 140}},
                        {1, 5, {0, 9}},
                        {4, 13, {0, 3, 11, 30}}};
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const Case& c : cases) {
      const int64_t n = c.cu.back(), w = c.heads * c.hd;
      // q, k, v: per-head views of a fused [N, 3 * H * D] projection.
      Tensor qkv = randn({n, 3 * w}, dt, 1.5, seed++);
      Tensor q = qkv.slice(1, 0, w).reshape({n, c.heads, c.hd});
      Tensor k = qkv.slice(1, w, 2 * w).reshape({n, c.heads, c.hd});
      Tensor v = qkv.slice(1, 2 * w, 3 * w).reshape({n, c.heads, c.hd});
      const float scale = 1.0f / std::sqrt(float(c.hd));
      const std::vector<double> want =
          segment_attention_ref(values(q), values(k), values(v), c.heads, c.hd, c.cu, scale);
      for (DType odt : {DType::kF32, DType::kBF16}) {
        Tensor out = poisoned({n, c.heads, c.hd}, odt);
        segment_attention(s, q, k, v, cudatest::i32(c.cu), scale, out);
        expect_near_all(want, out, rel_tol(odt), odt == DType::kF32 ? 2e-6 : 1e-3,
                        std::string("segment_attention ") + dtype_name(dt) + "->" +
                            dtype_name(odt) + " heads " + std::to_string(c.heads) + " hd " +
                            std::to_string(c.hd));
      }
    }
}

TEST(EncoderOps, SegmentAttentionDoesNotCrossSegments) {
  // Changing the second segment's keys and values leaves the first segment's rows alone.
  Stream s(Device::cpu(), 1);
  Tensor q = randn({10, 2, 8}, DType::kF32, 1.0, 1), k = randn({10, 2, 8}, DType::kF32, 1.0, 2);
  Tensor v = randn({10, 2, 8}, DType::kF32, 1.0, 3);
  Tensor cu = cudatest::i32({0, 4, 10});
  Tensor a = poisoned({10, 2, 8}, DType::kF32), b = poisoned({10, 2, 8}, DType::kF32);
  segment_attention(s, q, k, v, cu, 0.3f, a);
  for (int64_t i = 4 * 16; i < 10 * 16; ++i) v.data<float>()[i] += 1.0f;
  segment_attention(s, q, k, v, cu, 0.3f, b);
  EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), 4 * 16 * 4), 0);
  EXPECT_NE(std::memcmp(a.data<float>() + 64, b.data<float>() + 64, 6 * 16 * 4), 0);
}

TEST(EncoderOps, SegmentAttentionRejectsBadSegments) {
  Stream s(Device::cpu(), 1);
  Tensor q = randn({6, 1, 4}, DType::kF32, 1.0, 1);
  Tensor out = Tensor::empty({6, 1, 4}, DType::kF32);
  expect_error(
      [&] {
        segment_attention(s, q, q, q, cudatest::i32({0, 5}), 1.0f, out);
      },
      "cu_seqlens must run from 0 to 6");
  expect_error(
      [&] {
        segment_attention(s, q, q, q, cudatest::i32({0, 4, 3, 6}), 1.0f, out);
      },
      "cu_seqlens[1] = 4 > cu_seqlens[2] = 3");
  expect_error([&] { segment_attention(s, q, q, q, cudatest::i32({0, 6}), 1.0f, q); }, "overlaps");
}

}  // namespace
}  // namespace vt
