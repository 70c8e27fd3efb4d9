// vt/ops/attention.h against a double-precision causal softmax attention over
// contiguous per-request K/V: random inputs, odd sizes, GQA, scattered blocks,
// several requests with context, poisoned outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "vt/ops/attention.h"

namespace vt {
namespace {

Tensor random_tensor(const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng);
  return t;
}
Tensor filled(const Shape& shape, float v) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}
template <class T>
Tensor index_tensor(const std::vector<T>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DTypeOf<T>::value);
  std::copy(v.begin(), v.end(), t.data<T>());
  return t;
}

TEST(PagedAttention, MatchesDoubleReferenceWithGqaAndScatteredBlocks) {
  std::mt19937 rng(17);
  const int64_t hq = 6, hkv = 2, d = 9, bs = 4, nblocks = 16, B = 3;
  const std::vector<int32_t> seq = {11, 1, 6}, qlen = {5, 1, 6};  // contexts 6, 0, 0
  const int64_t max_blocks = 3;
  std::vector<int32_t> table = {7, 2, 12, 9, 0, 0, 3, 15, 0};  // scattered, padded with 0
  // Full K/V of every request (context + new), as a reference holds them.
  std::vector<Tensor> kf, vf;
  for (int64_t b = 0; b < B; ++b) {
    kf.push_back(random_tensor({seq[size_t(b)], hkv, d}, rng));
    vf.push_back(random_tensor({seq[size_t(b)], hkv, d}, rng));
  }
  Tensor kc = filled({nblocks, bs, hkv, d}, std::numeric_limits<float>::quiet_NaN());
  Tensor vc = filled({nblocks, bs, hkv, d}, std::numeric_limits<float>::quiet_NaN());
  auto slot = [&](int64_t b, int64_t i) { return int64_t(table[size_t(b * max_blocks + i / bs)]) * bs + i % bs; };
  Stream s;
  // Context tokens go in first (a previous step), then this step's tokens.
  std::vector<int32_t> qsl = {0};
  std::vector<int64_t> new_slots;
  const int64_t T = qlen[0] + qlen[1] + qlen[2];
  Tensor knew = Tensor::empty({T, hkv, d}, DType::kF32), vnew = Tensor::empty({T, hkv, d}, DType::kF32);
  int64_t t = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t ctx = seq[size_t(b)] - qlen[size_t(b)];
    for (int64_t i = 0; i < seq[size_t(b)]; ++i) {
      if (i < ctx) {  // write the context straight away, one token at a time
        Tensor k1 = kf[size_t(b)].slice(0, i, i + 1), v1 = vf[size_t(b)].slice(0, i, i + 1);
        kv_cache_write(s, k1, v1, index_tensor<int64_t>({slot(b, i)}, {1}), kc, vc);
      } else {
        std::copy_n(kf[size_t(b)].data<float>() + i * hkv * d, hkv * d, knew.data<float>() + t * hkv * d);
        std::copy_n(vf[size_t(b)].data<float>() + i * hkv * d, hkv * d, vnew.data<float>() + t * hkv * d);
        new_slots.push_back(slot(b, i));
        ++t;
      }
    }
    qsl.push_back(int32_t(t));
  }
  kv_cache_write(s, knew, vnew, index_tensor(new_slots, {T}), kc, vc);
  Tensor q = random_tensor({T, hq, d}, rng);
  Tensor out = filled({T, hq, d}, std::numeric_limits<float>::quiet_NaN());
  const float scale = 1.0f / std::sqrt(float(d));
  paged_attention(s, q, kc, vc, index_tensor(qsl, {B + 1}), index_tensor(seq, {B}),
                  index_tensor(table, {B, max_blocks}), scale, out);
  double worst = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < qlen[size_t(b)]; ++j) {
      const int64_t tok = qsl[size_t(b)] + j, pos = seq[size_t(b)] - qlen[size_t(b)] + j;
      for (int64_t h = 0; h < hq; ++h) {
        const int64_t g = h / (hq / hkv);
        std::vector<double> p;
        double mx = -1e300, sum = 0;
        for (int64_t i = 0; i <= pos; ++i) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += double(q.data<float>()[(tok * hq + h) * d + e]) *
                   kf[size_t(b)].data<float>()[(i * hkv + g) * d + e];
          p.push_back(dot * scale);
          mx = std::max(mx, p.back());
        }
        for (double& x : p) sum += (x = std::exp(x - mx));
        for (int64_t e = 0; e < d; ++e) {
          double o = 0;
          for (int64_t i = 0; i <= pos; ++i)
            o += p[size_t(i)] / sum * vf[size_t(b)].data<float>()[(i * hkv + g) * d + e];
          const double diff = std::abs(o - out.data<float>()[(tok * hq + h) * d + e]);
          worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
        }
      }
    }
  EXPECT_LT(worst, 1e-5);
}

TEST(PagedAttention, RefusesOutOfRangeSlotsAndBlocks) {
  std::mt19937 rng(2);
  Stream s;
  Tensor k = random_tensor({2, 1, 4}, rng), kc = filled({2, 2, 1, 4}, 0), vc = filled({2, 2, 1, 4}, 0);
  EXPECT_THROW(kv_cache_write(s, k, k, index_tensor<int64_t>({0, 4}, {2}), kc, vc), vtllm::Error);
  Tensor q = random_tensor({2, 2, 4}, rng), out = filled({2, 2, 4}, 0);
  EXPECT_THROW(paged_attention(s, q, kc, vc, index_tensor<int32_t>({0, 2}, {2}),
                               index_tensor<int32_t>({2}, {1}), index_tensor<int32_t>({5}, {1, 1}),
                               1.0f, out),
               vtllm::Error);
  // seq_len longer than the block table holds
  EXPECT_THROW(paged_attention(s, q, kc, vc, index_tensor<int32_t>({0, 2}, {2}),
                               index_tensor<int32_t>({3}, {1}), index_tensor<int32_t>({1}, {1, 1}),
                               1.0f, out),
               vtllm::Error);
}

}  // namespace
}  // namespace vt
