// vt/ops/gdn.h against double-precision references written from the definitions
// (qwen3_5.md §8): random inputs, odd sizes, several requests with their own slots,
// outputs poisoned with NaN before each call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "vt/ops/copy.h"
#include "vt/ops/gdn.h"
#include "vt/ops/gemm.h"
#include "vt/ops/norm.h"

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
  gdn_gates(s, a, b, alog, dt, DType::kF32, g, beta);
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

TEST(GdnGates, BetaRoundsThroughTheGivenDtypeAsTheOldCopies) {
  // The layer used to round beta with two copies (f32 -> bf16 -> f32); the op's
  // beta_round must give the same bits, and g must not change. a and b are column slices
  // of one wider tensor, as the fused projection's.
  std::mt19937 rng(6);
  const int64_t T = 9, hv = 7, W = 2 * hv + 3;
  Tensor proj = random_tensor({T, W}, rng, -6, 6);
  Tensor alog = random_tensor({hv}, rng, -3, 1), dt = random_tensor({hv}, rng, -1, 1);
  const Tensor b = proj.slice(1, 1, 1 + hv), a = proj.slice(1, 1 + hv, 1 + 2 * hv);
  Stream s;
  Tensor g0 = poisoned({T, hv}), beta0 = poisoned({T, hv});
  gdn_gates(s, a, b, alog, dt, DType::kF32, g0, beta0);
  for (DType round : {DType::kBF16, DType::kF16}) {
    Tensor narrow = Tensor::empty({T, hv}, round), want = Tensor::empty({T, hv}, DType::kF32);
    copy(s, beta0, narrow);
    copy(s, narrow, want);
    Tensor g = poisoned({T, hv}), beta = poisoned({T, hv});
    gdn_gates(s, a, b, alog, dt, round, g, beta);
    for (int64_t i = 0; i < T * hv; ++i) {
      EXPECT_EQ(g.data<float>()[i], g0.data<float>()[i]) << i;
      EXPECT_EQ(beta.data<float>()[i], want.data<float>()[i]) << dtype_name(round) << " " << i;
    }
    // Rounding moved some values (the check can fail).
    int moved = 0;
    for (int64_t i = 0; i < T * hv; ++i) moved += beta.data<float>()[i] != beta0.data<float>()[i];
    EXPECT_GT(moved, T * hv / 2) << dtype_name(round);
  }
  Tensor g = poisoned({T, hv}), beta = poisoned({T, hv});
  EXPECT_THROW(gdn_gates(s, a, b, alog, dt, DType::kI32, g, beta), vtllm::Error);
}

// The GDN layer's fused layout (models/layers/gdn.cpp) against the ops it replaced, on
// the CPU: one linear over the stacked in_proj weights read through column slices, one
// l2_normalize over the [T, 2 Hk, Dk] view, gdn_gates rounding beta, and the gated norm
// reading z per head from the slice, versus four linears, 2 Hk per-head l2_normalize
// calls, the gates plus two copies, and a contiguous z. Every value must be the same bits.
TEST(GdnLayerLayout, FusedOpsGiveTheSameBitsAsSeparateOnes) {
  Stream s;
  const int64_t T = 5, H = 48, hk = 2, hv = 4, dk = 16, dv = 16;
  const int64_t kd = hk * dk, cd = 2 * kd + hv * dv, vd = hv * dv, width = cd + vd + 2 * hv;
  std::mt19937 rng(21);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const auto rnd = [&](const Shape& shape, float lo, float hi) {
      Tensor t = Tensor::empty(shape, dt);
      copy(s, random_tensor(shape, rng, lo, hi), t);
      return t;
    };
    Tensor x = rnd({T, H}, -2, 2), w_qkv = rnd({cd, H}, -0.3f, 0.3f), w_z = rnd({vd, H}, -0.3f, 0.3f);
    Tensor w_b = rnd({hv, H}, -0.3f, 0.3f), w_a = rnd({hv, H}, -0.3f, 0.3f);
    Tensor alog = rnd({hv}, -2, 1), dtb = rnd({hv}, -1, 1), nw = rnd({dv}, 0.5f, 1.5f);
    Tensor stacked = Tensor::empty({width, H}, dt);
    int64_t row = 0;
    for (const Tensor* p : {&w_qkv, &w_z, &w_b, &w_a}) {
      Tensor rows = stacked.slice(0, row, row + p->size(0));
      copy(s, *p, rows);
      row += p->size(0);
    }
    // Separate: today's ops before the fusion.
    Tensor mixed = Tensor::empty({T, cd}, dt), z = Tensor::empty({T, vd}, dt);
    Tensor bl = Tensor::empty({T, hv}, dt), al = Tensor::empty({T, hv}, dt);
    linear(s, x, w_qkv, mixed);
    linear(s, x, w_z, z);
    linear(s, x, w_b, bl);
    linear(s, x, w_a, al);
    Tensor q0 = Tensor::empty({T, hk, dk}, DType::kF32), k0 = Tensor::empty({T, hk, dk}, DType::kF32);
    for (int64_t h = 0; h < hk; ++h) {
      Tensor qh = q0.select(1, h), kh = k0.select(1, h);
      l2_normalize(s, mixed.slice(1, h * dk, (h + 1) * dk), 1e-6f, qh);
      l2_normalize(s, mixed.slice(1, kd + h * dk, kd + (h + 1) * dk), 1e-6f, kh);
    }
    Tensor g0 = poisoned({T, hv}), beta0 = poisoned({T, hv});
    gdn_gates(s, al, bl, alog, dtb, DType::kF32, g0, beta0);
    if (dt != DType::kF32) {
      Tensor narrow = Tensor::empty({T, hv}, dt);
      copy(s, beta0, narrow);
      copy(s, narrow, beta0);
    }
    Tensor o = rnd({T, hv, dv}, -2, 2), y0 = Tensor::empty({T, hv, dv}, dt);
    gated_rms_norm(s, o, z.view({T, hv, dv}), nw, 1e-6f, y0);
    // Fused.
    Tensor proj = Tensor::empty({T, width}, dt);
    linear(s, x, stacked, proj);
    Tensor qk = Tensor::empty({T, 2 * hk, dk}, DType::kF32);
    l2_normalize(s, proj.slice(1, 0, 2 * kd).reshape({T, 2 * hk, dk}), 1e-6f, qk);
    Tensor g1 = poisoned({T, hv}), beta1 = poisoned({T, hv});
    gdn_gates(s, proj.slice(1, cd + vd + hv, width), proj.slice(1, cd + vd, cd + vd + hv), alog,
              dtb, dt, g1, beta1);
    Tensor y1 = Tensor::empty({T, hv, dv}, dt);
    gated_rms_norm(s, o, proj.slice(1, cd, cd + vd).reshape({T, hv, dv}), nw, 1e-6f, y1);

    const auto same = [&](const Tensor& a, const Tensor& b, const char* what) {
      Tensor ca = contiguous(s, a), cb = contiguous(s, b);
      ASSERT_EQ(ca.shape(), cb.shape()) << what;
      EXPECT_EQ(std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()), 0)
          << what << " (" << dtype_name(dt) << ")";
    };
    same(mixed, proj.slice(1, 0, cd), "mixed");
    same(z, proj.slice(1, cd, cd + vd), "z");
    same(bl, proj.slice(1, cd + vd, cd + vd + hv), "b");
    same(al, proj.slice(1, cd + vd + hv, width), "a");
    same(q0, qk.slice(1, 0, hk), "q");
    same(k0, qk.slice(1, hk, 2 * hk), "k");
    same(g0, g1, "g");
    same(beta0, beta1, "beta");
    same(y0, y1, "gated norm");
  }
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
