// vt::moe_route (vt/ops/moe.h) on the CPU against qwen3_5.md §9.2's routing evaluated in
// double here: softmax over all experts, the k largest by a full sort (equal
// probabilities: the lower expert first), renormalised. Random logits (f32 and bf16,
// rows of a wider matrix), k from 1 to E, and ties forced at the k-th place.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "base/error.h"
#include "vt/ops/copy.h"
#include "vt/ops/moe.h"

namespace vt {
namespace {

struct Routing {
  std::vector<int32_t> ids;
  std::vector<double> weights;
};

// The reference: row t of logits (as f32 values) -> k ids and weights in double.
Routing reference_route(const std::vector<float>& logits, int64_t T, int64_t E, int64_t k) {
  Routing r;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> p(static_cast<size_t>(E));
    double mx = -INFINITY, sum = 0;
    for (int64_t e = 0; e < E; ++e) mx = std::max(mx, double(logits[size_t(t * E + e)]));
    for (int64_t e = 0; e < E; ++e) sum += p[size_t(e)] = std::exp(logits[size_t(t * E + e)] - mx);
    for (double& v : p) v /= sum;
    std::vector<int32_t> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return p[size_t(a)] > p[size_t(b)]; });
    double top = 0;
    for (int64_t j = 0; j < k; ++j) top += p[size_t(order[size_t(j)])];
    for (int64_t j = 0; j < k; ++j) {
      r.ids.push_back(order[size_t(j)]);
      r.weights.push_back(p[size_t(order[size_t(j)])] / top);
    }
  }
  return r;
}

float as_float(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kF32 ? t.data<float>()[i] : bf16_to_f32(t.data<BF16>()[i]);
}

// Runs moe_route on logits (a [T, E] view of `storage`) and checks it against the reference.
void check_route(const Tensor& logits, int64_t k, DType wdt) {
  Stream s(Device::cpu(), 3);
  const int64_t T = logits.size(0), E = logits.size(1);
  std::vector<float> lf;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t e = 0; e < E; ++e) {
      Tensor one = logits.slice(0, t, t + 1).slice(1, e, e + 1);
      Tensor f = to_dtype(s, one, DType::kF32);
      lf.push_back(f.data<float>()[0]);
    }
  const Routing want = reference_route(lf, T, E, k);
  Tensor ids = Tensor::empty({T, k}, DType::kI32), w = Tensor::empty({T, k}, wdt);
  moe_route(s, logits, k, ids, w);
  for (int64_t i = 0; i < T * k; ++i) {
    ASSERT_EQ(ids.data<int32_t>()[i], want.ids[size_t(i)])
        << "token " << i / k << " place " << i % k << " (E " << E << ", k " << k << ")";
    const double tol = wdt == DType::kF32 ? 2e-6 : 4e-3;  // bf16: half an ulp near 1, plus f32
    EXPECT_NEAR(as_float(w, i), want.weights[size_t(i)], tol * want.weights[size_t(i)] + 1e-7)
        << "token " << i / k << " place " << i % k;
  }
}

Tensor random_logits(int64_t T, int64_t cols, DType dt, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Tensor f = Tensor::empty({T, cols}, DType::kF32);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = d(rng);
  Stream s(Device::cpu(), 1);
  return to_dtype(s, f, dt);
}

TEST(MoeRoute, MatchesTheDoubleSoftmaxTopkForEveryK) {
  for (int64_t E : {1, 5, 16, 64}) {
    for (int64_t k : {int64_t(1), std::min<int64_t>(E, 4), std::min<int64_t>(E, 8), E}) {
      SCOPED_TRACE(testing::Message() << "E " << E << " k " << k);
      check_route(random_logits(37, E, DType::kF32, uint32_t(E * 100 + k), 2.0f), k, DType::kF32);
    }
  }
}

TEST(MoeRoute, Bf16LogitsFromAWiderMatrixRoundTheWeights) {
  // Rows of one stride that is not E (a column slice), bf16 logits and weights.
  Tensor wide = random_logits(23, 40, DType::kBF16, 7, 1.5f);
  Tensor logits = wide.slice(1, 3, 35);  // [23, 32]
  check_route(logits, 8, DType::kBF16);
  check_route(logits, 8, DType::kF32);
}

TEST(MoeRoute, TiesAtTheKthPlaceKeepTheLowerExpert) {
  // bf16 logits with many equal values: every row has a run of equal logits straddling
  // place k, so the kept experts are the lowest-indexed of the run.
  const int64_t T = 12, E = 16, k = 4;
  Tensor f = Tensor::empty({T, E}, DType::kF32);
  std::mt19937 rng(11);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> row(size_t(E), -2.0f);
    // Two clear winners, then five equal at 0.5 at random places, the rest below.
    std::vector<int32_t> perm(static_cast<size_t>(E));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    row[size_t(perm[0])] = 3.0f;
    row[size_t(perm[1])] = 2.0f;
    for (int j = 2; j < 7; ++j) row[size_t(perm[size_t(j)])] = 0.5f;
    std::copy(row.begin(), row.end(), f.data<float>() + t * E);
  }
  Stream s(Device::cpu(), 2);
  Tensor logits = to_dtype(s, f, DType::kBF16);
  check_route(logits, k, DType::kBF16);
  // And directly: places 2 and 3 are the two lowest indices among the five tied experts.
  Tensor ids = Tensor::empty({T, k}, DType::kI32), w = Tensor::empty({T, k}, DType::kF32);
  moe_route(s, logits, k, ids, w);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int32_t> tied;
    for (int32_t e = 0; e < E; ++e)
      if (f.data<float>()[t * E + e] == 0.5f) tied.push_back(e);
    EXPECT_EQ(ids.data<int32_t>()[t * k + 2], tied[0]) << "token " << t;
    EXPECT_EQ(ids.data<int32_t>()[t * k + 3], tied[1]) << "token " << t;
    EXPECT_EQ(w.data<float>()[t * k + 2], w.data<float>()[t * k + 3]) << "token " << t;
  }
}

TEST(MoeRoute, LargeLogitsDoNotOverflow) {
  Tensor logits = random_logits(9, 16, DType::kF32, 3, 1.0f);
  for (int64_t i = 0; i < logits.numel(); ++i) logits.data<float>()[i] += 500.0f;
  check_route(logits, 4, DType::kF32);
}

TEST(MoeRoute, RejectsBadArguments) {
  Stream s(Device::cpu(), 1);
  Tensor logits = random_logits(3, 8, DType::kF32, 1, 1.0f);
  Tensor ids = Tensor::empty({3, 2}, DType::kI32), w = Tensor::empty({3, 2}, DType::kF32);
  EXPECT_THROW(moe_route(s, logits, 0, ids, w), vtllm::Error);
  Tensor ids9 = Tensor::empty({3, 9}, DType::kI32), w9 = Tensor::empty({3, 9}, DType::kF32);
  EXPECT_THROW(moe_route(s, logits, 9, ids9, w9), vtllm::Error);
  Tensor ids64 = Tensor::empty({3, 2}, DType::kI64);
  EXPECT_THROW(moe_route(s, logits, 2, ids64, w), vtllm::Error);
  Tensor w_short = Tensor::empty({2, 2}, DType::kF32);
  EXPECT_THROW(moe_route(s, logits, 2, ids, w_short), vtllm::Error);
}

}  // namespace
}  // namespace vt
