// SparseMoeBlock (models/layers/moe.h) on the CPU against qwen3_5.md §9.2 evaluated in
// double here, router to output (softmax over all experts, top-k with the lower expert
// first on ties, renormalised; routed SwiGLU experts; the shared expert times its
// sigmoid gate), on random weights: f32 activations exactly, bf16 activations with the
// double values rounded to bf16 at the oracle's points.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "models/layers/moe.h"
#include "models/layers/weights.h"
#include "vt/ops/copy.h"

namespace vtllm::models {
namespace {

constexpr int64_t H = 48, E = 12, K = 4, I = 8, Is = 20;
const std::string kPrefix = "model.layers.0.mlp.";

double bf16_round(double v) { return vt::bf16_to_f32(vt::f32_to_bf16(float(v))); }

struct Params {
  std::vector<float> router, gate_up, down, s_gate, s_up, s_down, s_gate_w;
};

std::vector<float> random_values(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& f : v) f = float(bf16_round(d(rng)));  // bf16-exact: one model for both dtypes
  return v;
}

Params random_params(uint32_t seed) {
  std::mt19937 rng(seed);
  const float h = 1.0f / std::sqrt(float(H));
  return {random_values(E * H, 2 * h, rng),
          random_values(E * 2 * I * H, h, rng),
          random_values(E * H * I, 1 / std::sqrt(float(I)), rng),
          random_values(Is * H, h, rng),
          random_values(Is * H, h, rng),
          random_values(H * Is, 1 / std::sqrt(float(Is)), rng),
          random_values(H, h, rng)};
}

vt::Tensor tensor_of(const std::vector<float>& v, const vt::Shape& shape, vt::DType dt) {
  vt::Tensor f = vt::Tensor::empty(shape, vt::DType::kF32);
  std::copy(v.begin(), v.end(), f.data<float>());
  vt::Stream s(vt::Device::cpu(), 1);
  return vt::to_dtype(s, f, dt);
}

// §9.2 for one token x in double; R rounds to bf16 when `narrow`.
std::vector<double> reference(const Params& p, const float* x, bool narrow) {
  auto R = [&](double v) { return narrow ? bf16_round(v) : v; };
  auto dot = [&](const float* w, const double* a, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += double(w[i]) * a[i];
    return s;
  };
  std::vector<double> xd(x, x + H);
  // Router: logits rounded, softmax in (here) double, top-k, renormalised, rounded.
  std::vector<double> prob(E);
  double mx = -INFINITY, sum = 0;
  for (int64_t e = 0; e < E; ++e)
    mx = std::max(mx, prob[size_t(e)] = R(dot(&p.router[size_t(e * H)], xd.data(), H)));
  for (double& v : prob) sum += v = std::exp(v - mx);
  for (double& v : prob) v /= sum;
  std::vector<int> order(E);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return prob[size_t(a)] > prob[size_t(b)]; });
  double top = 0;
  for (int64_t j = 0; j < K; ++j) top += prob[size_t(order[size_t(j)])];
  // SwiGLU of one expert given its gate/up rows and down matrix.
  auto swiglu = [&](const float* gate, const float* up, const float* down, int64_t inter) {
    std::vector<double> hid(static_cast<size_t>(inter)), out(H);
    for (int64_t i = 0; i < inter; ++i) {
      const double g = R(dot(gate + i * H, xd.data(), H)), u = R(dot(up + i * H, xd.data(), H));
      hid[size_t(i)] = R(R(g / (1 + std::exp(-g))) * u);
    }
    for (int64_t h = 0; h < H; ++h) out[size_t(h)] = R(dot(down + h * inter, hid.data(), inter));
    return out;
  };
  std::vector<double> routed(H, 0.0);
  for (int64_t j = 0; j < K; ++j) {
    const int64_t e = order[size_t(j)];
    const double w = R(prob[size_t(e)] / top);
    const float* gu = &p.gate_up[size_t(e * 2 * I * H)];
    const std::vector<double> d = swiglu(gu, gu + I * H, &p.down[size_t(e * H * I)], I);
    for (int64_t h = 0; h < H; ++h) routed[size_t(h)] += R(d[size_t(h)] * w);
  }
  const std::vector<double> shared = swiglu(p.s_gate.data(), p.s_up.data(), p.s_down.data(), Is);
  const double sg = R(1 / (1 + std::exp(-R(dot(p.s_gate_w.data(), xd.data(), H)))));
  std::vector<double> out(H);
  for (int64_t h = 0; h < H; ++h)
    out[size_t(h)] = R(R(routed[size_t(h)]) + R(sg * shared[size_t(h)]));
  return out;
}

void check_block(vt::DType dt, double rel) {
  vt::Stream s(vt::Device::cpu(), 3);
  const Params p = random_params(5);
  io::Weights w;
  w.tensors[kPrefix + "gate.weight"] = tensor_of(p.router, {E, H}, dt);
  w.tensors[kPrefix + "experts.gate_up_proj"] = tensor_of(p.gate_up, {E, 2 * I, H}, dt);
  w.tensors[kPrefix + "experts.down_proj"] = tensor_of(p.down, {E, H, I}, dt);
  w.tensors[kPrefix + "shared_expert.gate_proj.weight"] = tensor_of(p.s_gate, {Is, H}, dt);
  w.tensors[kPrefix + "shared_expert.up_proj.weight"] = tensor_of(p.s_up, {Is, H}, dt);
  w.tensors[kPrefix + "shared_expert.down_proj.weight"] = tensor_of(p.s_down, {H, Is}, dt);
  w.tensors[kPrefix + "shared_expert_gate.weight"] = tensor_of(p.s_gate_w, {1, H}, dt);
  WeightStore store(std::move(w), "moe block test", s);
  io::MoeConfig moe;
  moe.num_experts = E;
  moe.num_experts_per_tok = K;
  moe.moe_intermediate_size = I;
  moe.shared_expert_intermediate_size = Is;
  SparseMoeBlock block(H, moe, store, kPrefix);
  store.check_all_used();

  const int64_t T = 13;
  std::mt19937 rng(9);
  const std::vector<float> x = random_values(size_t(T * H), 1.0f, rng);
  vt::Tensor out = vt::Tensor::empty({T, H}, dt);
  block.forward(s, tensor_of(x, {T, H}, dt), out);
  vt::Tensor got = vt::to_dtype(s, out, vt::DType::kF32);
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<double> want = reference(p, &x[size_t(t * H)], dt != vt::DType::kF32);
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    ASSERT_GT(scale, 0.0);
    for (int64_t h = 0; h < H; ++h)
      ASSERT_NEAR(got.data<float>()[t * H + h], want[size_t(h)], rel * scale)
          << vt::dtype_name(dt) << " token " << t << " dim " << h;
  }
}

TEST(SparseMoeBlock, F32MatchesTheDoubleReference) { check_block(vt::DType::kF32, 1e-5); }
TEST(SparseMoeBlock, Bf16RoundsAsTheOracle) { check_block(vt::DType::kBF16, 2e-2); }

}  // namespace
}  // namespace vtllm::models
