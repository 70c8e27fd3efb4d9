// vt/ops/gdn.h against double-precision references written from the definitions
// (qwen3_5.md §8): random inputs, odd sizes, several requests with their own slots,
// outputs poisoned with NaN before each call.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "vt/ops/gdn.h"

namespace vt {
namespace {

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -1, float hi = 1) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}
Tensor poisoned(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  return t;
}
Tensor i32(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::kI32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}
Tensor clone(const Tensor& a) {
  Tensor t = Tensor::empty(a.shape(), DType::kF32);
  std::copy(a.data<float>(), a.data<float>() + a.numel(), t.data<float>());
  return t;
}
// Rows of x l2-normalised in place (the ops take normalised q and k).
void normalise_rows(Tensor& x) {
  const int64_t d = x.size(-1);
  for (int64_t r = 0; r < x.numel() / d; ++r) {
    float* p = x.data<float>() + r * d;
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += double(p[i]) * p[i];
    for (int64_t i = 0; i < d; ++i) p[i] = float(p[i] / std::sqrt(ss));
  }
}
double max_abs_diff(const Tensor& a, const std::vector<double>& ref) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::abs(double(a.data<float>()[i]) - ref[size_t(i)]);
    m = std::isnan(d) ? INFINITY : std::max(m, d);
  }
  return m;
}

// The token loop of §8.6 in double; state [S, Hv, Dk, Dv] updated in place.
std::vector<double> delta_rule_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                         const Tensor& g, const Tensor& beta, double scale,
                                         const std::vector<int32_t>& qsl,
                                         const std::vector<int32_t>& slots,
                                         std::vector<double>& state) {
  const int64_t hk = q.size(1), dk = q.size(2), hv = v.size(1), dv = v.size(2);
  std::vector<double> out(size_t(v.numel()));
  for (size_t b = 0; b + 1 < qsl.size(); ++b)
    for (int64_t h = 0; h < hv; ++h) {
      double* S = state.data() + (slots[b] * hv + h) * dk * dv;
      const int64_t kh = h / (hv / hk);
      for (int64_t t = qsl[b]; t < qsl[b + 1]; ++t) {
        const float* qt = q.data<float>() + (t * hk + kh) * dk;
        const float* kt = k.data<float>() + (t * hk + kh) * dk;
        const float* vt = v.data<float>() + (t * hv + h) * dv;
        const double decay = std::exp(double(g.data<float>()[t * hv + h]));
        const double bt = beta.data<float>()[t * hv + h];
        for (int64_t i = 0; i < dk * dv; ++i) S[i] *= decay;
        for (int64_t e = 0; e < dv; ++e) {
          double m = 0;
          for (int64_t i = 0; i < dk; ++i) m += S[i * dv + e] * kt[i];
          const double u = bt * (vt[e] - m);
          for (int64_t i = 0; i < dk; ++i) S[i * dv + e] += kt[i] * u;
        }
        for (int64_t e = 0; e < dv; ++e) {
          double o = 0;
          for (int64_t i = 0; i < dk; ++i) o += S[i * dv + e] * qt[i] * scale;
          out[size_t((t * hv + h) * dv + e)] = o;
        }
      }
    }
  return out;
}

struct DeltaCase {
  int64_t hk = 2, hv = 6, dk = 5, dv = 7, slots = 4;
  std::vector<int32_t> qsl = {0, 150, 155, 156};  // 3 chunks (64, 64, 22), 5 tokens, 1 token
  std::vector<int32_t> slot = {2, 0, 3};
};

using DeltaFn = void (*)(Stream&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                         const Tensor&, float, const Tensor&, Tensor&, const Tensor&, Tensor&);

void check_delta_rule(DeltaFn fn, const char* name) {
  DeltaCase c;
  std::mt19937 rng(42);
  const int64_t T = c.qsl.back();
  Tensor q = random_tensor({T, c.hk, c.dk}, rng), k = random_tensor({T, c.hk, c.dk}, rng);
  normalise_rows(q);
  normalise_rows(k);
  Tensor v = random_tensor({T, c.hv, c.dv}, rng);
  Tensor g = random_tensor({T, c.hv}, rng, -2.0f, -0.01f);
  Tensor beta = random_tensor({T, c.hv}, rng, 0.05f, 0.95f);
  Tensor state = random_tensor({c.slots, c.hv, c.dk, c.dv}, rng);  // a non-zero initial state
  std::vector<double> ref_state(state.data<float>(), state.data<float>() + state.numel());
  const float scale = 1.0f / std::sqrt(float(c.dk));
  auto ref = delta_rule_reference(q, k, v, g, beta, scale, c.qsl, c.slot, ref_state);
  Stream s;
  Tensor out = poisoned({T, c.hv, c.dv});
  fn(s, q, k, v, g, beta, scale, i32(c.qsl), state, i32(c.slot), out);
  EXPECT_LT(max_abs_diff(out, ref), 2e-5) << name << " output";
  EXPECT_LT(max_abs_diff(state, ref_state), 2e-5) << name << " final state";
}

TEST(GatedDeltaRule, RecurrentMatchesDoubleReference) {
  check_delta_rule(&gated_delta_rule_recurrent, "recurrent");
}
TEST(GatedDeltaRule, ChunkedMatchesDoubleReference) {
  check_delta_rule(&gated_delta_rule_chunked, "chunked");
}

TEST(GatedDeltaRule, ChunkedAndRecurrentAgreeToF32Rounding) {
  DeltaCase c;
  std::mt19937 rng(7);
  const int64_t T = c.qsl.back();
  Tensor q = random_tensor({T, c.hk, c.dk}, rng), k = random_tensor({T, c.hk, c.dk}, rng);
  normalise_rows(q);
  normalise_rows(k);
  Tensor v = random_tensor({T, c.hv, c.dv}, rng), g = random_tensor({T, c.hv}, rng, -1.0f, 0.0f);
  Tensor beta = random_tensor({T, c.hv}, rng, 0.0f, 1.0f);
  Tensor s0 = random_tensor({c.slots, c.hv, c.dk, c.dv}, rng), s1 = clone(s0);
  Stream s;
  Tensor o0 = poisoned({T, c.hv, c.dv}), o1 = poisoned({T, c.hv, c.dv});
  gated_delta_rule_recurrent(s, q, k, v, g, beta, 0.5f, i32(c.qsl), s0, i32(c.slot), o0);
  gated_delta_rule_chunked(s, q, k, v, g, beta, 0.5f, i32(c.qsl), s1, i32(c.slot), o1);
  std::vector<double> o1d(o1.data<float>(), o1.data<float>() + o1.numel());
  std::vector<double> s1d(s1.data<float>(), s1.data<float>() + s1.numel());
  EXPECT_LT(max_abs_diff(o0, o1d), 1e-5);
  EXPECT_LT(max_abs_diff(s0, s1d), 1e-5);
}

TEST(CausalConv1d, MatchesDoubleReferenceAndCarriesState) {
  std::mt19937 rng(3);
  const int64_t C = 11, K = 4, slots = 3;
  const std::vector<int32_t> qsl = {0, 9, 10, 12}, slot = {1, 2, 0};
  const int64_t T = qsl.back();
  Tensor x = random_tensor({T, C}, rng), w = random_tensor({C, K}, rng);
  Tensor state = random_tensor({slots, K - 1, C}, rng);
  const Tensor state0 = clone(state);
  Stream s;
  Tensor out = poisoned({T, C});
  causal_conv1d_silu(s, x, w, i32(qsl), state, i32(slot), out);
  std::vector<double> ref(size_t(T * C)), ref_state(state0.data<float>(),
                                                    state0.data<float>() + state0.numel());
  for (size_t b = 0; b + 1 < qsl.size(); ++b)
    for (int64_t c = 0; c < C; ++c) {
      std::vector<double> win;
      for (int64_t j = 0; j < K - 1; ++j)
        win.push_back(state0.data<float>()[(slot[b] * (K - 1) + j) * C + c]);
      for (int64_t t = qsl[b]; t < qsl[b + 1]; ++t) win.push_back(x.data<float>()[t * C + c]);
      for (int64_t t = qsl[b]; t < qsl[b + 1]; ++t) {
        double acc = 0;
        const int64_t i = t - qsl[b];  // window index of the first tap
        for (int64_t j = 0; j < K; ++j) acc += w.data<float>()[c * K + j] * win[size_t(i + j)];
        ref[size_t(t * C + c)] = acc / (1 + std::exp(-acc));
      }
      for (int64_t j = 0; j < K - 1; ++j)
        ref_state[size_t((slot[b] * (K - 1) + j) * C + c)] = win[win.size() - size_t(K - 1 - j)];
    }
  EXPECT_LT(max_abs_diff(out, ref), 1e-5);
  EXPECT_LT(max_abs_diff(state, ref_state), 0.0 + 1e-12);
}

TEST(GdnGates, MatchDoubleReference) {
  std::mt19937 rng(5);
  const int64_t T = 7, hv = 5;
  Tensor a = random_tensor({T, hv}, rng, -30, 30), b = random_tensor({T, hv}, rng, -4, 4);
  Tensor alog = random_tensor({hv}, rng, -3, 1), dt = random_tensor({hv}, rng, -1, 1);
  Tensor g = poisoned({T, hv}), beta = poisoned({T, hv});
  Stream s;
  gdn_gates(s, a, b, alog, dt, g, beta);
  std::vector<double> rg, rb;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < hv; ++h) {
      const double x = double(a.data<float>()[t * hv + h]) + dt.data<float>()[h];
      const double sp = x > 20 ? x : std::log1p(std::exp(x));
      rg.push_back(-std::exp(double(alog.data<float>()[h])) * sp);
      rb.push_back(1 / (1 + std::exp(-double(b.data<float>()[t * hv + h]))));
    }
  EXPECT_LT(max_abs_diff(g, rg), 1e-4);  // |g| up to ~80: f32 relative ~1e-6
  EXPECT_LT(max_abs_diff(beta, rb), 1e-6);
}

TEST(GatedRmsNorm, MatchesDoubleReference) {
  std::mt19937 rng(9);
  const int64_t R = 6, D = 13;
  Tensor x = random_tensor({R, D}, rng, -3, 3), z = random_tensor({R, D}, rng, -3, 3);
  Tensor w = random_tensor({D}, rng, 0.5f, 1.5f), out = poisoned({R, D});
  Stream s;
  gated_rms_norm(s, x, z, w, 1e-6f, out);
  std::vector<double> ref;
  for (int64_t r = 0; r < R; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < D; ++i) ss += std::pow(double(x.data<float>()[r * D + i]), 2);
    const double inv = 1 / std::sqrt(ss / D + 1e-6);
    for (int64_t i = 0; i < D; ++i) {
      const double zi = z.data<float>()[r * D + i];
      ref.push_back(x.data<float>()[r * D + i] * inv * w.data<float>()[i] * zi / (1 + std::exp(-zi)));
    }
  }
  EXPECT_LT(max_abs_diff(out, ref), 1e-5);
}

TEST(GatedDeltaRule, RefusesSharedSlotsAndBadShapes) {
  std::mt19937 rng(1);
  Tensor q = random_tensor({4, 1, 4}, rng), v = random_tensor({4, 3, 4}, rng);
  Tensor g = random_tensor({4, 3}, rng), beta = random_tensor({4, 3}, rng);
  Tensor state = random_tensor({2, 3, 4, 4}, rng), out = poisoned({4, 3, 4});
  Stream s;
  EXPECT_THROW(gated_delta_rule_chunked(s, q, q, v, g, beta, 1.0f, i32({0, 2, 4}), state,
                                        i32({1, 1}), out),
               vtllm::Error);
  Tensor v_bad = random_tensor({4, 2, 4}, rng);
  EXPECT_THROW(gated_delta_rule_recurrent(s, q, q, v_bad, g, beta, 1.0f, i32({0, 4}), state,
                                          i32({0}), out),
               vtllm::Error);
}

}  // namespace
}  // namespace vt
