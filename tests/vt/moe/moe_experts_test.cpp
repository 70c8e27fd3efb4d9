// vt::moe_experts (vt/ops/moe.h) on the CPU against qwen3_5.md §9.2's routed experts
// evaluated in double here (products and sums in double; for bf16 activations the
// double values are rounded to bf16 at the oracle's points). Random weights, routing
// that leaves experts idle and sends every token to one of them, k = E, and a check
// that a token's output does not depend on the other tokens of the call.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "base/error.h"
#include "vt/ops/copy.h"
#include "vt/ops/moe.h"

namespace vt {
namespace {

struct Problem {
  int64_t T, H, I, E, k;
  std::vector<float> x, gate_up, down, weights;  // values exactly representable in bf16
  std::vector<int32_t> ids;
};

float bf16_round(double v) { return bf16_to_f32(f32_to_bf16(float(v))); }

std::vector<float> random_values(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& f : v) f = bf16_round(d(rng));
  return v;
}

// Token t's experts: distinct, from `pool` (a subset of [0, E)), with positive weights
// summing to about one (as moe_route makes them).
Problem make_problem(int64_t T, int64_t H, int64_t I, int64_t E, int64_t k,
                     const std::vector<int32_t>& pool, uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p{T, H, I, E, k, {}, {}, {}, {}, {}};
  p.x = random_values(size_t(T * H), 1.0f, rng);
  p.gate_up = random_values(size_t(E * 2 * I * H), 1.0f / std::sqrt(float(H)), rng);
  p.down = random_values(size_t(E * H * I), 1.0f / std::sqrt(float(I)), rng);
  std::uniform_real_distribution<float> u(0.1f, 1.0f);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int32_t> choice = pool;
    std::shuffle(choice.begin(), choice.end(), rng);
    float sum = 0;
    std::vector<float> w(static_cast<size_t>(k));
    for (float& v : w) sum += v = u(rng);
    for (int64_t j = 0; j < k; ++j) {
      p.ids.push_back(choice[size_t(j)]);
      p.weights.push_back(bf16_round(w[size_t(j)] / sum));
    }
  }
  return p;
}

// out[t] per §9.2 in double; `narrow`: round to bf16 where the oracle rounds.
std::vector<double> reference(const Problem& p, bool narrow) {
  auto R = [&](double v) { return narrow ? double(bf16_round(v)) : v; };
  std::vector<double> out(size_t(p.T * p.H));
  for (int64_t t = 0; t < p.T; ++t) {
    const float* x = &p.x[size_t(t * p.H)];
    std::vector<double> acc(size_t(p.H), 0.0);
    for (int64_t j = 0; j < p.k; ++j) {
      const int64_t e = p.ids[size_t(t * p.k + j)];
      const double w = p.weights[size_t(t * p.k + j)];
      std::vector<double> gu(size_t(2 * p.I)), hid(size_t(p.I));
      for (int64_t r = 0; r < 2 * p.I; ++r) {
        double a = 0;
        for (int64_t c = 0; c < p.H; ++c)
          a += double(x[c]) * p.gate_up[size_t((e * 2 * p.I + r) * p.H + c)];
        gu[size_t(r)] = R(a);
      }
      for (int64_t i = 0; i < p.I; ++i) {
        const double g = gu[size_t(i)];
        hid[size_t(i)] = R(R(g / (1.0 + std::exp(-g))) * gu[size_t(p.I + i)]);
      }
      for (int64_t h = 0; h < p.H; ++h) {
        double d = 0;
        for (int64_t i = 0; i < p.I; ++i)
          d += hid[size_t(i)] * p.down[size_t((e * p.H + h) * p.I + i)];
        acc[size_t(h)] += R(R(d) * w);
      }
    }
    for (int64_t h = 0; h < p.H; ++h) out[size_t(t * p.H + h)] = R(acc[size_t(h)]);
  }
  return out;
}

Tensor tensor_of(const std::vector<float>& v, const Shape& shape, DType dt) {
  Tensor f = Tensor::empty(shape, DType::kF32);
  std::copy(v.begin(), v.end(), f.data<float>());
  Stream s(Device::cpu(), 1);
  return to_dtype(s, f, dt);
}

std::vector<float> values_of(const Tensor& t) {
  Stream s(Device::cpu(), 1);
  Tensor f = to_dtype(s, t, DType::kF32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

// Runs the op on p with activations `act` and weights `wdt`.
std::vector<float> run(const Problem& p, DType act, DType wdt, DType route_dt, int threads = 3) {
  Stream s(Device::cpu(), threads);
  Tensor x = tensor_of(p.x, {p.T, p.H}, act);
  Tensor gu = tensor_of(p.gate_up, {p.E, 2 * p.I, p.H}, wdt);
  Tensor down = tensor_of(p.down, {p.E, p.H, p.I}, wdt);
  Tensor w = tensor_of(p.weights, {p.T, p.k}, route_dt);
  Tensor ids = Tensor::empty({p.T, p.k}, DType::kI32);
  std::copy(p.ids.begin(), p.ids.end(), ids.data<int32_t>());
  Tensor out = Tensor::empty({p.T, p.H}, act);
  std::memset(out.data_ptr(), 0xff, out.nbytes());  // NaN: every element must be written
  moe_experts(s, x, gu, down, ids, w, out);
  return values_of(out);
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double d : v) m = std::max(m, std::abs(d));
  return m;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rel) {
  const double scale = max_abs(want);
  ASSERT_GT(scale, 0.0);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * scale) << "element " << i;
}

std::vector<int32_t> all_experts(int64_t E) {
  std::vector<int32_t> v(static_cast<size_t>(E));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(MoeExperts, F32MatchesTheDoubleReference) {
  for (int64_t k : {1, 4, 8}) {
    SCOPED_TRACE(testing::Message() << "k " << k);
    Problem p = make_problem(19, 48, 24, 16, k, all_experts(16), uint32_t(10 + k));
    expect_close(run(p, DType::kF32, DType::kF32, DType::kF32), reference(p, false), 1e-5);
    // bf16 weights widened on the fly: the same values, the same result.
    expect_close(run(p, DType::kF32, DType::kBF16, DType::kF32), reference(p, false), 1e-5);
  }
}

TEST(MoeExperts, KEqualsEAndUnevenLoads) {
  // k = E: every expert for every token.
  Problem all = make_problem(7, 32, 16, 6, 6, all_experts(6), 21);
  expect_close(run(all, DType::kF32, DType::kF32, DType::kF32), reference(all, false), 1e-5);
  // Only experts {3, 9, 12} of 16 are ever used; expert 9 by every token (k = 3 of a pool
  // of 3): thirteen experts idle, one with the whole batch.
  Problem uneven = make_problem(33, 32, 16, 16, 3, {3, 9, 12}, 22);
  expect_close(run(uneven, DType::kF32, DType::kBF16, DType::kF32), reference(uneven, false), 1e-5);
}

TEST(MoeExperts, Bf16RoundsWhereTheOracleRounds) {
  Problem p = make_problem(17, 64, 32, 16, 4, all_experts(16), 31);
  const std::vector<double> narrow = reference(p, true), wide = reference(p, false);
  const std::vector<float> got = run(p, DType::kBF16, DType::kBF16, DType::kBF16);
  // Against the rounded reference: the double-vs-f32 sums may flip an intermediate
  // rounding, a bf16 ulp at most here and there.
  expect_close(got, narrow, 2e-2);
  // The rounded path is closer to the rounded reference than to the unrounded one
  // (it does round at the intermediate points).
  double d_narrow = 0, d_wide = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    d_narrow += std::abs(got[i] - narrow[i]);
    d_wide += std::abs(got[i] - wide[i]);
  }
  EXPECT_LT(d_narrow, 0.5 * d_wide);
  // Most elements agree with the rounded reference exactly.
  int64_t equal = 0;
  for (size_t i = 0; i < got.size(); ++i) equal += double(got[i]) == narrow[i];
  EXPECT_GT(equal, int64_t(got.size()) * 9 / 10);
}

TEST(MoeExperts, ATokenDoesNotDependOnItsBatch) {
  Problem p = make_problem(11, 32, 16, 8, 2, all_experts(8), 41);
  for (DType act : {DType::kF32, DType::kBF16}) {
    const std::vector<float> batch = run(p, act, DType::kBF16, act, 3);
    for (int64_t t = 0; t < p.T; ++t) {
      Problem one = p;
      one.T = 1;
      one.x.assign(p.x.begin() + t * p.H, p.x.begin() + (t + 1) * p.H);
      one.ids.assign(p.ids.begin() + t * p.k, p.ids.begin() + (t + 1) * p.k);
      one.weights.assign(p.weights.begin() + t * p.k, p.weights.begin() + (t + 1) * p.k);
      const std::vector<float> alone = run(one, act, DType::kBF16, act, 1);
      for (int64_t h = 0; h < p.H; ++h)
        ASSERT_EQ(alone[size_t(h)], batch[size_t(t * p.H + h)]) << "token " << t << " dim " << h;
    }
  }
}

TEST(MoeExperts, RejectsBadArguments) {
  Stream s(Device::cpu(), 1);
  Problem p = make_problem(3, 8, 4, 4, 2, all_experts(4), 51);
  Tensor x = tensor_of(p.x, {3, 8}, DType::kF32);
  Tensor gu = tensor_of(p.gate_up, {4, 8, 8}, DType::kF32);
  Tensor down = tensor_of(p.down, {4, 8, 4}, DType::kF32);
  Tensor w = tensor_of(p.weights, {3, 2}, DType::kF32);
  Tensor ids = Tensor::empty({3, 2}, DType::kI32);
  std::copy(p.ids.begin(), p.ids.end(), ids.data<int32_t>());
  Tensor out = Tensor::empty({3, 8}, DType::kF32);
  moe_experts(s, x, gu, down, ids, w, out);  // well-formed
  ids.data<int32_t>()[3] = 4;                // expert out of range
  EXPECT_THROW(moe_experts(s, x, gu, down, ids, w, out), vtllm::Error);
  ids.data<int32_t>()[3] = p.ids[3];
  Tensor out_bf16 = Tensor::empty({3, 8}, DType::kBF16);  // out's dtype must be x's
  EXPECT_THROW(moe_experts(s, x, gu, down, ids, w, out_bf16), vtllm::Error);
  Tensor down_bad = tensor_of(std::vector<float>(4 * 8 * 3), {4, 8, 3}, DType::kF32);
  EXPECT_THROW(moe_experts(s, x, gu, down_bad, ids, w, out), vtllm::Error);
  EXPECT_THROW(moe_experts(s, x, gu, down, ids, w, x), vtllm::Error);  // out overlaps x
}

}  // namespace
}  // namespace vt
