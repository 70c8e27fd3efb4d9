// vt::gdn_fused_recurrent (vt/ops/gdn.h) on the CPU against the op sequence it replaces
// in the GDN layer's decode step: l2_normalize of the 2 Hk q/k heads into f32 (one call
// over a [T, 2 Hk, Dk] view, as the layer made it), gdn_gates, gated_delta_rule_recurrent
// into the activation dtype and gated_rms_norm. Random inputs laid out as the layer's
// (head views of column slices of the conv output and of the projection), bf16 and f32
// activations, Hv / Hk 2 and 3, requests of one and of several tokens in out-of-order
// slots, a fresh (zero) slot among them; out and state must be equal bit for bit. And,
// since that only ties the op to its own parts, f32 steps against qwen3_5.md §8.4-8.6 and
// §5.2 evaluated in double here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "vt/ops/copy.h"
#include "vt/ops/fill.h"
#include "vt/ops/gdn.h"
#include "vt/ops/norm.h"

namespace vt {
namespace {

Tensor random_tensor(const Shape& shape, DType dt, std::mt19937& rng, float lo, float hi) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  Stream s(Device::cpu(), 1);
  return to_dtype(s, t, dt);
}

Tensor poisoned(const Shape& shape, DType dt) {
  Tensor t = Tensor::empty(shape, dt);
  std::memset(t.data_ptr(), 0xff, t.nbytes());  // NaN in every float dtype
  return t;
}

Tensor i32(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::kI32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

Tensor clone(Stream& s, const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  copy(s, t, c);
  return c;
}

// One step's inputs in the GDN layer's layout: act = conv output [T, q | k | v], proj the
// projection's z | b | a columns.
struct Step {
  int64_t T, hk, hv, dk, dv;
  Tensor act, proj, alog, dtb, nw, state;
  std::vector<int32_t> qsl, slots;
  int64_t kd() const { return hk * dk; }
  int64_t vd() const { return hv * dv; }
  Tensor q() const { return act.slice(1, 0, kd()).reshape({T, hk, dk}); }
  Tensor k() const { return act.slice(1, kd(), 2 * kd()).reshape({T, hk, dk}); }
  Tensor qk() const { return act.slice(1, 0, 2 * kd()).reshape({T, 2 * hk, dk}); }
  Tensor v() const { return act.slice(1, 2 * kd(), 2 * kd() + vd()).reshape({T, hv, dv}); }
  Tensor z() const { return proj.slice(1, 0, vd()).reshape({T, hv, dv}); }
  Tensor b() const { return proj.slice(1, vd(), vd() + hv); }
  Tensor a() const { return proj.slice(1, vd() + hv, vd() + 2 * hv); }
};

Step make_step(int64_t hk, int64_t ratio, int64_t dk, int64_t dv, DType dt,
               std::vector<int32_t> qsl, std::vector<int32_t> slots, int64_t num_slots,
               unsigned seed) {
  std::mt19937 rng(seed);
  Step st{qsl.back(),      hk, hk * ratio, dk, dv, {}, {}, {}, {}, {}, {}, std::move(qsl),
          std::move(slots)};
  st.act = random_tensor({st.T, 2 * st.kd() + st.vd()}, dt, rng, -2, 2);
  // z ~ U(-3, 3); b, a ~ U(-4, 4) with dt_bias up to 24 so softplus crosses its threshold.
  st.proj = random_tensor({st.T, st.vd() + 2 * st.hv}, dt, rng, -3, 3);
  st.alog = random_tensor({st.hv}, dt, rng, -1, 1.5);
  st.dtb = random_tensor({st.hv}, dt, rng, -4, 24);
  st.nw = random_tensor({dv}, dt, rng, 0.5, 1.5);
  st.state = random_tensor({num_slots, st.hv, dk, dv}, DType::kF32, rng, -0.5, 0.5);
  Stream s;
  Tensor fresh = st.state.select(0, st.slots[0]);
  zero(s, fresh);  // the first request starts a sequence
  return st;
}

// The layer's unfused decode step (before gdn_fused_recurrent): y, state updated.
Tensor unfused(Stream& s, const Step& st, Tensor& state, float eps) {
  const DType dt = st.act.dtype();
  Tensor qk = poisoned({st.T, 2 * st.hk, st.dk}, DType::kF32);
  l2_normalize(s, st.qk(), 1e-6f, qk);
  Tensor g = poisoned({st.T, st.hv}, DType::kF32), beta = poisoned({st.T, st.hv}, DType::kF32);
  gdn_gates(s, st.a(), st.b(), st.alog, st.dtb, dt, g, beta);
  Tensor o = poisoned({st.T, st.hv, st.dv}, dt);
  gated_delta_rule_recurrent(s, qk.slice(1, 0, st.hk), qk.slice(1, st.hk, 2 * st.hk), st.v(), g,
                             beta, 1.0f / std::sqrt(float(st.dk)), i32(st.qsl), state,
                             i32(st.slots), o);
  Tensor y = poisoned({st.T, st.hv, st.dv}, dt);
  gated_rms_norm(s, o, st.z(), st.nw, eps, y);
  return y;
}

Tensor fused(Stream& s, const Step& st, Tensor& state, float eps) {
  Tensor y = poisoned({st.T, st.hv, st.dv}, st.act.dtype());
  gdn_fused_recurrent(s, st.q(), st.k(), st.v(), st.z(), st.a(), st.b(), st.alog, st.dtb,
                      st.act.dtype(), 1.0f / std::sqrt(float(st.dk)), st.nw, eps, i32(st.qsl),
                      state, i32(st.slots), y);
  return y;
}

void expect_same_bytes(const Tensor& want, const Tensor& got, const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  EXPECT_EQ(std::memcmp(want.data_ptr(), got.data_ptr(), want.nbytes()), 0) << what;
}

TEST(GdnFusedRecurrent, EqualsUnfusedOpsBitForBit) {
  Stream s;
  unsigned seed = 40;
  for (DType dt : {DType::kBF16, DType::kF32})
    for (int64_t ratio : {2, 3}) {
      // Requests of 1, 3, 1 and 2 tokens in slots out of order (slot 1 untouched).
      const Step st = make_step(2, ratio, 32, 24, dt, {0, 1, 4, 5, 7}, {5, 0, 3, 2}, 6, seed++);
      Tensor st_unfused = clone(s, st.state), st_fused = clone(s, st.state);
      const Tensor y0 = unfused(s, st, st_unfused, 1e-6f);
      const Tensor y1 = fused(s, st, st_fused, 1e-6f);
      const std::string what = std::string(dtype_name(dt)) + " Hv/Hk " + std::to_string(ratio);
      expect_same_bytes(y0, y1, what + ": out");
      expect_same_bytes(st_unfused, st_fused, what + ": state");
      // Not a vacuous equality: every output element was written.
      Tensor y32 = to_dtype(s, y1, DType::kF32);
      for (int64_t i = 0; i < y32.numel(); ++i)
        ASSERT_FALSE(std::isnan(y32.data<float>()[i])) << what << " at " << i;
    }
}

// A batch of decode steps (one token per request) at the Qwen3.5 head sizes, consecutive
// steps carrying the state: the same bits as the unfused ops at every step.
TEST(GdnFusedRecurrent, DecodeStepsEqualUnfusedOps) {
  Stream s;
  Step st = make_step(4, 2, 128, 128, DType::kBF16, {0, 1, 2, 3}, {2, 4, 0}, 5, 70);
  Tensor st_unfused = clone(s, st.state), st_fused = clone(s, st.state);
  for (unsigned step = 0; step < 3; ++step) {
    const Step next = make_step(4, 2, 128, 128, DType::kBF16, st.qsl, st.slots, 5, 80 + step);
    st.act = next.act;  // new activations, the same weights
    st.proj = next.proj;
    const Tensor y0 = unfused(s, st, st_unfused, 1e-6f);
    const Tensor y1 = fused(s, st, st_fused, 1e-6f);
    expect_same_bytes(y0, y1, "step " + std::to_string(step) + ": out");
    expect_same_bytes(st_unfused, st_fused, "step " + std::to_string(step) + ": state");
  }
}

// The layer's decode math of qwen3_5.md (§8.4 gates, §8.5 l2norm and q scale, §8.6 the
// token loop, §5.2 the gated norm with a plain weight) in double, for f32 activations (no
// rounding points): out [T, Hv, Dv] and the state, updated in place.
std::vector<double> reference_step(const Step& st, std::vector<double>& state, double eps) {
  const auto f = [](const Tensor& t, int64_t i, int64_t j, int64_t k) {
    return double(t.data<float>()[i * t.stride(0) + j * t.stride(1) + k * t.stride(2)]);
  };
  const auto at2 = [](const Tensor& t, int64_t i, int64_t j) {
    return double(t.data<float>()[i * t.stride(0) + j * t.stride(1)]);
  };
  const Tensor q = st.q(), k = st.k(), v = st.v(), z = st.z(), a = st.a(), b = st.b();
  const int64_t ratio = st.hv / st.hk;
  std::vector<double> out(size_t(st.T * st.hv * st.dv));
  for (size_t r = 0; r + 1 < st.qsl.size(); ++r)
    for (int64_t t = st.qsl[r]; t < st.qsl[r + 1]; ++t)
      for (int64_t h = 0; h < st.hv; ++h) {
        const int64_t hk = h / ratio;
        const double x = at2(a, t, h) + double(st.dtb.data<float>()[h]);
        const double g =
            -std::exp(double(st.alog.data<float>()[h])) * (x > 20 ? x : std::log1p(std::exp(x)));
        const double beta = 1 / (1 + std::exp(-at2(b, t, h)));
        std::vector<double> qn(size_t(st.dk)), kn(size_t(st.dk));
        double sq = 0, sk = 0;
        for (int64_t i = 0; i < st.dk; ++i) {
          sq += f(q, t, hk, i) * f(q, t, hk, i);
          sk += f(k, t, hk, i) * f(k, t, hk, i);
        }
        for (int64_t i = 0; i < st.dk; ++i) {
          qn[size_t(i)] = f(q, t, hk, i) / std::sqrt(sq + 1e-6) / std::sqrt(double(st.dk));
          kn[size_t(i)] = f(k, t, hk, i) / std::sqrt(sk + 1e-6);
        }
        double* S = state.data() + (st.slots[r] * st.hv + h) * st.dk * st.dv;
        std::vector<double> o(size_t(st.dv));
        for (int64_t e = 0; e < st.dv; ++e) {
          double m = 0;
          for (int64_t i = 0; i < st.dk; ++i) {
            S[i * st.dv + e] *= std::exp(g);
            m += S[i * st.dv + e] * kn[size_t(i)];
          }
          const double u = beta * (f(v, t, h, e) - m);
          for (int64_t i = 0; i < st.dk; ++i) {
            S[i * st.dv + e] += kn[size_t(i)] * u;
            o[size_t(e)] += S[i * st.dv + e] * qn[size_t(i)];
          }
        }
        double ms = 0;
        for (double x2 : o) ms += x2 * x2;
        const double inv = 1 / std::sqrt(ms / double(st.dv) + eps);
        for (int64_t e = 0; e < st.dv; ++e) {
          const double zv = f(z, t, h, e);
          out[size_t((t * st.hv + h) * st.dv + e)] =
              o[size_t(e)] * inv * double(st.nw.data<float>()[e]) * zv / (1 + std::exp(-zv));
        }
      }
  return out;
}

// |got - want| <= tol (|want| + rms(want)) for every element; reports the worst.
void expect_near_double(const std::vector<double>& want, const Tensor& got, double tol,
                        const std::string& what) {
  ASSERT_EQ(int64_t(want.size()), got.numel()) << what;
  double ss = 0;
  for (double w : want) ss += w * w;
  const double rms = std::sqrt(ss / double(std::max<size_t>(want.size(), 1)));
  double worst = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = double(got.data<float>()[i]), w = want[size_t(i)];
    const double r = std::abs(g - w) / (std::abs(w) + rms);
    if (!(r <= worst)) {  // NaN counts as the worst
      worst = std::isnan(r) ? std::numeric_limits<double>::infinity() : r;
      at = i;
    }
  }
  EXPECT_LE(worst, tol) << what << ": worst at " << at << " got " << got.data<float>()[at]
                        << " want " << want[size_t(at)];
}

// f32 activations against the double reference over consecutive steps: requests of one
// and of several tokens in out-of-order slots, a fresh slot among them, Hv / Hk 2 and 3,
// the Qwen3.5 head size and a small one.
TEST(GdnFusedRecurrent, MatchesDoubleReferenceOfTheLayerMath) {
  Stream s;
  struct Case {
    int64_t hk, ratio, dk, dv;
    std::vector<int32_t> qsl, slots;
  };
  unsigned seed = 120;
  for (const Case& c : {Case{2, 3, 32, 24, {0, 1, 4, 5, 7}, {5, 0, 3, 2}},
                        Case{2, 2, 128, 128, {0, 1, 2, 3}, {2, 4, 0}}}) {
    Step st = make_step(c.hk, c.ratio, c.dk, c.dv, DType::kF32, c.qsl, c.slots, 6, seed++);
    Tensor state = clone(s, st.state);
    std::vector<double> ref_state(size_t(state.numel()));
    std::copy(state.data<float>(), state.data<float>() + state.numel(), ref_state.begin());
    for (int step = 0; step < 3; ++step) {
      if (step > 0) {  // new activations, the same weights and states
        const Step next =
            make_step(c.hk, c.ratio, c.dk, c.dv, DType::kF32, c.qsl, c.slots, 6, seed++);
        st.act = next.act;
        st.proj = next.proj;
      }
      const std::string what = "Dk " + std::to_string(c.dk) + " Hv/Hk " + std::to_string(c.ratio) +
                               " step " + std::to_string(step);
      const std::vector<double> want = reference_step(st, ref_state, 1e-6);
      const Tensor y = fused(s, st, state, 1e-6f);
      expect_near_double(want, y, 2e-5, what + ": out");
      expect_near_double(ref_state, state, 2e-5, what + ": state");
    }
  }
}

TEST(GdnFusedRecurrent, RefusesBadShapes) {
  Stream s;
  const Step st = make_step(2, 2, 8, 8, DType::kF32, {0, 1, 2}, {0, 1}, 2, 90);
  Tensor state = clone(s, st.state), y = poisoned({st.T, st.hv, st.dv}, DType::kF32);
  const auto call = [&](const Tensor& k, const Tensor& z, const Tensor& nw, Tensor& out) {
    gdn_fused_recurrent(s, st.q(), k, st.v(), z, st.a(), st.b(), st.alog, st.dtb, DType::kF32, 1.0f,
                        nw, 1e-6f, i32(st.qsl), state, i32(st.slots), out);
  };
  EXPECT_NO_THROW(call(st.k(), st.z(), st.nw, y));
  EXPECT_THROW(call(st.k().slice(1, 0, 1), st.z(), st.nw, y), vtllm::Error);  // k heads
  EXPECT_THROW(call(st.k(), st.z().slice(1, 0, 2), st.nw, y), vtllm::Error);  // z heads
  EXPECT_THROW(call(st.k(), st.z(), st.nw.slice(0, 0, 4), y), vtllm::Error);  // norm width
  Tensor y_bad = poisoned({st.T, st.hv, st.dv + 1}, DType::kF32);
  EXPECT_THROW(call(st.k(), st.z(), st.nw, y_bad), vtllm::Error);
  EXPECT_THROW(
      gdn_fused_recurrent(s, st.q(), st.k(), st.v(), st.z(), st.a(), st.b(), st.alog, st.dtb,
                          DType::kF32, 1.0f, st.nw, 1e-6f, i32(st.qsl), state, i32({1, 1}), y),
      vtllm::Error);  // a slot shared by two requests
}

}  // namespace
}  // namespace vt
