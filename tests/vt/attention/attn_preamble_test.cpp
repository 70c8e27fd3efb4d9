// vt/ops/attn_preamble.h: the fused AttnQkNormRopeGate against a double-precision
// reference and against the unfused ops; the cos/sin table for 1-D and MRoPE positions.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "vt/ops/activation.h"
#include "vt/ops/attn_preamble.h"
#include "vt/ops/rope.h"

namespace vt {
namespace {

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -2, float hi = 2) {
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
Tensor positions_of(const std::vector<int64_t>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::kI64);
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

// Double reference of one head: RMSNorm (kind) then NeoX rotary with the table row.
std::vector<double> norm_rope_ref(const float* x, const float* w, int64_t d, bool one_plus,
                                  const float* cs, int64_t rd) {
  double ss = 0;
  for (int64_t i = 0; i < d; ++i) ss += double(x[i]) * x[i];
  const double inv = 1 / std::sqrt(ss / d + 1e-6);
  std::vector<double> a(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) a[size_t(i)] = x[i] * inv * (one_plus ? 1.0 + w[i] : double(w[i]));
  std::vector<double> o = a;
  const int64_t h = rd / 2;
  for (int64_t j = 0; j < h; ++j) {
    o[size_t(j)] = a[size_t(j)] * cs[j] - a[size_t(j + h)] * cs[h + j];
    o[size_t(j + h)] = a[size_t(j + h)] * cs[j] + a[size_t(j)] * cs[h + j];
  }
  return o;
}

TEST(AttnQkNormRopeGate, GatedMatchesDoubleReferenceAndUnfusedOps) {
  std::mt19937 rng(23);
  const int64_t T = 5, hq = 3, hkv = 1, d = 10, rd = 6;
  Tensor qg = random_tensor({T, hq * 2 * d}, rng), k = random_tensor({T, hkv * d}, rng);
  Tensor qw = random_tensor({d}, rng, -0.5f, 0.5f), kw = random_tensor({d}, rng, -0.5f, 0.5f);
  Tensor cs = rope_cos_sin_table(positions_of({0, 3, 17, 400, 9999}, {T}), rd, 1e6);
  Tensor q = poisoned({T, hq, d}), ko = poisoned({T, hkv, d}), gate = poisoned({T, hq, d});
  Stream s;
  attn_qk_norm_rope_gate(s, qg, k, qw, kw, 1e-6f, RmsNormKind::kOnePlus, cs, q, ko, gate);
  double worst = 0;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < hq; ++h) {
      const float* src = qg.data<float>() + t * hq * 2 * d + h * 2 * d;
      auto ref = norm_rope_ref(src, qw.data<float>(), d, true, cs.data<float>() + t * rd, rd);
      for (int64_t e = 0; e < d; ++e) {
        worst = std::max(worst, std::abs(ref[size_t(e)] - q.data<float>()[(t * hq + h) * d + e]));
        const double g = 1 / (1 + std::exp(-double(src[d + e])));
        worst = std::max(worst, std::abs(g - gate.data<float>()[(t * hq + h) * d + e]));
      }
    }
    auto ref = norm_rope_ref(k.data<float>() + t * d, kw.data<float>(), d, true,
                             cs.data<float>() + t * rd, rd);
    for (int64_t e = 0; e < d; ++e)
      worst = std::max(worst, std::abs(ref[size_t(e)] - ko.data<float>()[t * d + e]));
  }
  EXPECT_LT(worst, 2e-6);
  for (int64_t i = 0; i < q.numel(); ++i) ASSERT_FALSE(std::isnan(q.data<float>()[i]));

  // The unfused spelling: rms_norm on the query view, rope_neox, sigmoid of the gate view.
  Tensor q2 = poisoned({T, hq, d}), g2 = poisoned({T, hq, d});
  const Tensor heads = qg.view({T, hq, 2 * d});
  rms_norm(s, heads.slice(2, 0, d), qw, 1e-6f, RmsNormKind::kOnePlus, q2);
  rope_neox(s, q2, cs, q2);
  sigmoid(s, heads.slice(2, d, 2 * d), g2);
  for (int64_t i = 0; i < q.numel(); ++i) {
    EXPECT_EQ(q.data<float>()[i], q2.data<float>()[i]) << i;
    EXPECT_EQ(gate.data<float>()[i], g2.data<float>()[i]) << i;
  }
}

TEST(AttnQkNormRopeGate, UngatedPlainNormFullRotary) {
  std::mt19937 rng(29);
  const int64_t T = 3, hq = 2, hkv = 2, d = 8;
  Tensor qg = random_tensor({T, hq * d}, rng), k = random_tensor({T, hkv * d}, rng);
  Tensor qw = random_tensor({d}, rng, 0.5f, 1.5f), kw = random_tensor({d}, rng, 0.5f, 1.5f);
  Tensor cs = rope_cos_sin_table(positions_of({5, 6, 7}, {T}), d, 1e4);
  Tensor q = poisoned({T, hq, d}), ko = poisoned({T, hkv, d});
  Stream s;
  attn_qk_norm_rope_gate(s, qg, k, qw, kw, 1e-6f, RmsNormKind::kPlain, cs, q, ko);
  double worst = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < hq; ++h) {
      auto ref = norm_rope_ref(qg.data<float>() + (t * hq + h) * d, qw.data<float>(), d, false,
                               cs.data<float>() + t * d, d);
      for (int64_t e = 0; e < d; ++e)
        worst = std::max(worst, std::abs(ref[size_t(e)] - q.data<float>()[(t * hq + h) * d + e]));
    }
  EXPECT_LT(worst, 2e-6);
  Tensor wrong_gate = poisoned({T, hq, d});  // a gate with a q projection that has none
  EXPECT_THROW(attn_qk_norm_rope_gate(s, qg, k, qw, kw, 1e-6f, RmsNormKind::kPlain, cs, q, ko,
                                      wrong_gate),
               vtllm::Error);
}

// transformers' rotary dim D = head_dim x partial_rotary_factor may be odd (head_dim 36 x
// 0.25 = 9): inv_freq = 1 / base ** (arange(0, D, 2) / D) has ceil(D/2) entries and
// cat(freqs, freqs) rotates 2 ceil(D/2) dims. Recomputed here in transformers' order.
TEST(RopeCosSinTable, OddRotaryDimRotatesTheNextEvenWidthAsTransformers) {
  const std::vector<int64_t> pos = {0, 1, 7, 123, 4097};
  const int64_t D = 9, half = 5;
  const double theta = 1e7;
  EXPECT_EQ(rope_table_width(D), 10);
  EXPECT_EQ(rope_table_width(8), 8);
  ASSERT_EQ(rope_inv_freq(D, theta).size(), size_t(half));
  Tensor one = rope_cos_sin_table(positions_of(pos, {5}), D, theta);
  ASSERT_EQ(one.size(1), 2 * half);
  std::vector<int64_t> three;
  for (int r = 0; r < 3; ++r) three.insert(three.end(), pos.begin(), pos.end());
  Tensor mr = rope_cos_sin_table(positions_of(three, {3, 5}), D, theta, {11, 11, 10});
  ASSERT_EQ(mr.size(1), 2 * half);
  for (size_t t = 0; t < pos.size(); ++t)
    for (int64_t i = 0; i < half; ++i) {
      const float inv = 1.0f / std::pow(float(theta), float(2 * i) / float(D));
      const float angle = float(pos[t]) * inv;
      const float* row = one.data<float>() + t * size_t(2 * half);
      EXPECT_EQ(row[i], float(std::cos(double(angle)))) << t << " " << i;
      EXPECT_EQ(row[half + i], float(std::sin(double(angle)))) << t << " " << i;
      EXPECT_EQ(mr.data<float>()[t * size_t(2 * half) + size_t(i)], row[i]);
    }
  // The model's unfused rotary on that table leaves dims past 10 alone.
  std::mt19937 rng(3);
  Tensor x = random_tensor({5, 1, 36}, rng), out = poisoned({5, 1, 36});
  Stream s(Device::cpu());
  rope_neox(s, x, one, out);
  for (int64_t t = 0; t < 5; ++t)
    for (int64_t i = 10; i < 36; ++i)
      EXPECT_EQ(out.data<float>()[t * 36 + i], x.data<float>()[t * 36 + i]);
}

TEST(RopeCosSinTable, MropeWithEqualRowsIsTheOneDimTable) {
  const std::vector<int64_t> pos = {0, 1, 2, 50, 123456};
  Tensor one = rope_cos_sin_table(positions_of(pos, {5}), 16, 1e7);
  std::vector<int64_t> three;
  for (int r = 0; r < 3; ++r) three.insert(three.end(), pos.begin(), pos.end());
  Tensor mr = rope_cos_sin_table(positions_of(three, {3, 5}), 16, 1e7, {3, 3, 2});
  for (int64_t i = 0; i < one.numel(); ++i) EXPECT_EQ(one.data<float>()[i], mr.data<float>()[i]);
}

TEST(RopeCosSinTable, MropeSlotsFollowTheInterleavedAxisRule) {
  // rotary 64, sections [11, 11, 10]: slots T H W T H W ... (qwen3_5.md §7.3).
  const int64_t rd = 64, half = 32;
  Tensor p = positions_of({7, 1000, 30000}, {3, 1});
  Tensor cs = rope_cos_sin_table(p, rd, 1e7, {11, 11, 10});
  for (int64_t i = 0; i < half; ++i) {
    const int64_t axis = (i % 3 == 1 && i < 33) ? 1 : (i % 3 == 2 && i < 30) ? 2 : 0;
    const double pos = p.data<int64_t>()[axis];
    const float inv = 1.0f / std::pow(1e7f, float(2 * i) / float(rd));
    const double angle = double(float(pos * inv));
    EXPECT_NEAR(cs.data<float>()[i], std::cos(angle), 1e-6) << "slot " << i;
    EXPECT_NEAR(cs.data<float>()[half + i], std::sin(angle), 1e-6) << "slot " << i;
  }
  EXPECT_THROW(rope_cos_sin_table(p, rd, 1e7, {11, 11}), vtllm::Error);
}

// Sections that do not sum to rotary_dim / 2 (transformers' default [11, 11, 10] with a
// head_dim of 48 or 32): each interleave is Python's slice(offset, 3 s, 3) clipped to the
// half frequencies, so every slot is computed as transformers' loop over H and W does.
TEST(RopeCosSinTable, MropeSectionsNeedNotSumToHalfTheRotaryDim) {
  Tensor p = positions_of({5, 700, 9000}, {3, 1});
  for (const auto& [rd, section] : std::vector<std::pair<int64_t, std::vector<int64_t>>>{
           {12, {11, 11, 10}}, {8, {11, 11, 10}}, {16, {1, 4, 0}}, {16, {0, 0, 0}}}) {
    const int64_t half = rd / 2;
    std::vector<int64_t> axis(size_t(half), 0);  // start from T, overwrite as the oracle
    for (int64_t dim : {1, 2})
      for (int64_t i = dim; i < std::min(3 * section[size_t(dim)], half); i += 3)
        axis[size_t(i)] = dim;
    Tensor cs = rope_cos_sin_table(p, rd, 1e6, section);
    for (int64_t i = 0; i < half; ++i) {
      const double pos = double(p.data<int64_t>()[axis[size_t(i)]]);
      const float inv = 1.0f / std::pow(1e6f, float(2 * i) / float(rd));
      const double angle = double(float(pos * inv));
      EXPECT_NEAR(cs.data<float>()[i], std::cos(angle), 1e-6) << "rd " << rd << " slot " << i;
      EXPECT_NEAR(cs.data<float>()[half + i], std::sin(angle), 1e-6) << "rd " << rd << " slot " << i;
    }
  }
}

}  // namespace
}  // namespace vt
