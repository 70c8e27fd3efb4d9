// CUDA moe_router (vt/cuda/moe/router.cu, through vt/ops/moe.h) against its definition:
// linear(x, router_w) -> logits, then moe_route(logits, k), run on the GPU as two ops
// (and on the CPU arm). Skipped without a GPU.
//
// Exactness: x on a grid of 1/8 in [-1, 1] and router_w on a grid of 1/64 in [-1/16, 1/16]
// make every partial sum of a logit a multiple of 2^-9 below 2^7 in magnitude at H 2048,
// exact in f32 in any order: the fused kernel's sums and cuBLAS's must then give the same
// bf16 logits, and the routing (the same device code on the same logits) the same ids and
// weights, byte for byte. The coarse logits tie often, so the tie rule decides places.
// Random normal inputs are compared within one bf16 rounding of the logits, the ids
// at the places where the top-k margins exceed it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_compare.h"
#include "vt/dtype.h"
#include "vt/ops/copy.h"
#include "vt/ops/gemm.h"
#include "vt/ops/moe.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/api.h"
#include "vt/cuda/moe.h"
#endif

namespace vt {
namespace {

// One problem on the host: x [T, H] and router_w [E, H] in bf16.
struct RouterProblem {
  int64_t T, H, E, k;
  Tensor x, w;
  std::string name() const {
    return "T " + std::to_string(T) + " H " + std::to_string(H) + " E " + std::to_string(E) +
           " k " + std::to_string(k);
  }
};

Tensor bf16_host(Stream& cpu, const std::vector<float>& v, const Shape& shape) {
  Tensor f = Tensor::empty(shape, DType::kF32);
  std::copy(v.begin(), v.end(), f.data<float>());
  return to_dtype(cpu, f, DType::kBF16);
}

// Exact inputs (see the top). `dup` > 0: router row e is row e % dup, so every logit value
// comes dup times over and E / dup experts tie at each.
RouterProblem exact_problem(Stream& cpu, int64_t T, int64_t H, int64_t E, int64_t k, uint64_t seed,
                            int64_t dup = 0) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> xd(-8, 8), wd(-4, 4);
  std::vector<float> x(size_t(T * H)), w(size_t(E * H));
  for (float& v : x) v = float(xd(rng)) / 8;
  for (float& v : w) v = float(wd(rng)) / 64;
  if (dup > 0)
    for (int64_t e = dup; e < E; ++e) std::copy_n(w.begin() + (e % dup) * H, H, w.begin() + e * H);
  return {T, H, E, k, bf16_host(cpu, x, {T, H}), bf16_host(cpu, w, {E, H})};
}

std::vector<float> floats(Stream& cpu, const Tensor& t) {
  Tensor f = to_dtype(cpu, t, DType::kF32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

// The premise of the exact tests, without a GPU: on exact inputs the CPU composition's
// logits are the exact dot products rounded once to bf16.
TEST(CudaMoeRouter, ExactInputsGiveExactLogitsOnTheCpu) {
  Stream cpu(Device::cpu());
  const RouterProblem p = exact_problem(cpu, 3, 2048, 16, 4, 7);
  Tensor logits = Tensor::empty({p.T, p.E}, DType::kBF16);
  Tensor ids = Tensor::empty({p.T, p.k}, DType::kI32), w = Tensor::empty({p.T, p.k}, DType::kBF16);
  moe_router(cpu, p.x, p.w, p.k, logits, ids, w);
  const std::vector<float> x = floats(cpu, p.x), rw = floats(cpu, p.w), l = floats(cpu, logits);
  int64_t nonzero = 0;
  for (int64_t t = 0; t < p.T; ++t)
    for (int64_t e = 0; e < p.E; ++e) {
      double d = 0;
      for (int64_t h = 0; h < p.H; ++h)
        d += double(x[size_t(t * p.H + h)]) * rw[size_t(e * p.H + h)];
      EXPECT_EQ(l[size_t(t * p.E + e)], bf16_to_f32(f32_to_bf16(float(d)))) << t << " " << e;
      if (d != 0) ++nonzero;
    }
  EXPECT_GT(nonzero, p.T * p.E / 2);
}

#if VTLLM_WITH_CUDA

using cudatest::Streams;

// Random normals: logits of about unit scale.
RouterProblem random_problem(int64_t T, int64_t H, int64_t E, int64_t k, uint64_t seed) {
  return {T,
          H,
          E,
          k,
          cudatest::randn({T, H}, DType::kBF16, 1.0, seed),
          cudatest::randn({E, H}, DType::kBF16, 1.0 / std::sqrt(double(H)), seed + 1)};
}

struct RouterOut {
  Tensor logits, ids, weights;  // on the host
};

std::vector<uint8_t> bytes(const Tensor& t) {
  const uint8_t* p = static_cast<const uint8_t*>(t.data_ptr());
  return std::vector<uint8_t>(p, p + t.nbytes());
}

// Outputs on the GPU, NaN / 0xffffffff-poisoned.
struct GpuOut {
  Tensor logits, ids, weights;
  GpuOut(Streams& s, const RouterProblem& p, DType w_dt)
      : logits(cudatest::poisoned_gpu(s, {p.T, p.E}, DType::kBF16)),
        ids(cudatest::poisoned_gpu(s, {p.T, p.k}, DType::kI32)),
        weights(cudatest::poisoned_gpu(s, {p.T, p.k}, w_dt)) {}
  RouterOut down(Streams& s) const { return {s.down(logits), s.down(ids), s.down(weights)}; }
};

// moe_router on the GPU under KernelConfig::moe_router = `t`.
RouterOut run_fused(Streams& s, const RouterProblem& p, Toggle t, DType w_dt = DType::kBF16) {
  cudatest::ScopedKernels kernels(s.gpu, [&](KernelConfig& c) { c.moe_router = t; });
  GpuOut o(s, p, w_dt);
  moe_router(s.gpu, s.up(p.x), s.up(p.w), p.k, o.logits, o.ids, o.weights);
  return o.down(s);
}

// The definition on the GPU: linear, then moe_route.
RouterOut run_composed(Streams& s, const RouterProblem& p, DType w_dt = DType::kBF16) {
  GpuOut o(s, p, w_dt);
  linear(s.gpu, s.up(p.x), s.up(p.w), o.logits);
  moe_route(s.gpu, o.logits, p.k, o.ids, o.weights);
  return o.down(s);
}

// The GPU's moe_route over given host logits: what the routing of those logits is.
RouterOut route_of(Streams& s, const RouterProblem& p, const Tensor& logits, DType w_dt) {
  GpuOut o(s, p, w_dt);
  copy(s.gpu, s.up(logits), o.logits);
  moe_route(s.gpu, o.logits, p.k, o.ids, o.weights);
  return o.down(s);
}

void expect_same(const RouterOut& got, const RouterOut& want, const std::string& what) {
  EXPECT_EQ(bytes(got.logits), bytes(want.logits)) << what << ": logits";
  EXPECT_EQ(bytes(got.ids), bytes(want.ids)) << what << ": ids";
  EXPECT_EQ(bytes(got.weights), bytes(want.weights)) << what << ": weights";
}

// Kernel launches of one moe_router call captured in a graph under `t`.
int64_t captured_kernels(Streams& s, const RouterProblem& p, Toggle t) {
  cudatest::ScopedKernels kernels(s.gpu, [&](KernelConfig& c) { c.moe_router = t; });
  Tensor x = s.up(p.x), w = s.up(p.w);
  GpuOut o(s, p, DType::kBF16);
  moe_router(s.gpu, x, w, p.k, o.logits, o.ids, o.weights);  // eager first
  s.gpu.synchronize();
  s.gpu.begin_capture();
  moe_router(s.gpu, x, w, p.k, o.logits, o.ids, o.weights);
  cuda::GraphExecPtr graph = s.gpu.end_capture();
  const int64_t n = Stream::graph_kernel_nodes(*graph);
  graph.reset();
  s.gpu.synchronize();
  return n;
}

// The shapes: the 35B-A3B router (H 2048, E 256, k 8), a small one (E 16, k 4), E not a
// multiple of the 8 warps of a block (20, 1000), H past one 2048-wide chunk round (4104).
struct RouterShape {
  int64_t H, E, k;
};
constexpr RouterShape kShapes[] = {
    {2048, 256, 8}, {256, 16, 4}, {136, 20, 4}, {512, 1000, 8}, {4104, 64, 8}};
constexpr int64_t kTokens[] = {1, 2, 5, 8, 9, 33};  // 9, 33: past kMoeRouterMaxTokens

// Exact inputs: the fused kernel (T <= 8) and the fallback (T past the bound, H % 8 != 0)
// give the composition's bytes; the logits also equal the CPU arm's.
TEST(CudaMoeRouter, ExactInputsEqualTheCompositionByteForByte) {
  VT_REQUIRE_GPU();
  Streams s;
  uint64_t seed = 100;
  std::vector<RouterShape> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.push_back({60, 16, 4});  // H % 8 != 0: the composition at every T
  for (const RouterShape& c : shapes)
    for (int64_t T : kTokens) {
      const RouterProblem p = exact_problem(s.cpu, T, c.H, c.E, c.k, seed++);
      const RouterOut want = run_composed(s, p);
      expect_same(run_fused(s, p, Toggle::kOn), want, p.name() + " on");
      expect_same(run_fused(s, p, Toggle::kAuto), want, p.name() + " auto");
      Tensor cpu_logits = Tensor::empty({p.T, p.E}, DType::kBF16);
      linear(s.cpu, p.x, p.w, cpu_logits);
      EXPECT_EQ(bytes(want.logits), bytes(cpu_logits)) << p.name() << ": logits vs the CPU arm";
    }
  // f32 routing weights through the fused kernel.
  const RouterProblem p = exact_problem(s.cpu, 4, 2048, 256, 8, seed++);
  expect_same(run_fused(s, p, Toggle::kOn, DType::kF32), run_composed(s, p, DType::kF32),
              p.name() + " f32 weights");
}

// Random inputs: the fused logits within one bf16 rounding of the composition's; its
// routing is moe_route's of its own logits (bytes), and its ids are the composition's
// at every place whose margins in the composition's logits exceed two such roundings.
TEST(CudaMoeRouter, RandomInputsWithinOneBf16RoundingOfTheComposition) {
  VT_REQUIRE_GPU();
  Streams s;
  uint64_t seed = 300;
  int64_t checked[std::size(kShapes)] = {};  // places whose ids were compared, per shape
  for (const RouterShape& c : kShapes)
    for (int64_t T : {1, 2, 5, 8}) {  // 16 tokens per shape
      const RouterProblem p = random_problem(T, c.H, c.E, c.k, seed);
      seed += 2;
      const RouterOut want = run_composed(s, p);
      const RouterOut got = run_fused(s, p, Toggle::kOn);
      // abs: two f32 sums of H products of about unit total may differ by a few f32 ulps
      // of that total, which a logit near 0 does not scale down.
      cudatest::expect_close(s, want.logits, got.logits, cudatest::kBf16Rel, 1.0 / 4096,
                             p.name() + " logits");
      const RouterOut own = route_of(s, p, got.logits, DType::kBF16);
      EXPECT_EQ(bytes(got.ids), bytes(own.ids)) << p.name() << ": ids vs moe_route";
      EXPECT_EQ(bytes(got.weights), bytes(own.weights)) << p.name() << ": weights vs moe_route";
      const std::vector<float> l = floats(s.cpu, want.logits);
      for (int64_t t = 0; t < T; ++t) {
        std::vector<float> row(l.begin() + t * c.E, l.begin() + (t + 1) * c.E);
        std::sort(row.begin(), row.end(), std::greater<float>());
        // Place j is decided where the logits on either side are more than two
        // roundings away from its own.
        auto clear = [&](int64_t j) {  // between sorted places j and j + 1
          return j + 1 >= c.E ||
                 row[size_t(j)] - row[size_t(j + 1)] >
                     2 * cudatest::kBf16Rel * std::max(std::fabs(row[size_t(j)]), 1.0f);
        };
        for (int64_t j = 0; j < c.k; ++j) {
          if ((j > 0 && !clear(j - 1)) || !clear(j)) continue;
          ++checked[&c - kShapes];
          EXPECT_EQ(got.ids.data<int32_t>()[t * c.k + j], want.ids.data<int32_t>()[t * c.k + j])
              << p.name() << " token " << t << " place " << j;
        }
      }
    }
  // Random margins decide most places (about half at E 256): the check is not vacuous.
  for (const RouterShape& c : kShapes)
    EXPECT_GE(checked[&c - kShapes], 16 * c.k / 8) << "E " << c.E << ": places checked";
}

// Experts whose router rows are equal tie exactly: the lower index takes the earlier
// place, as moe_route (torch.topk) orders them, fused and composed alike.
TEST(CudaMoeRouter, TiesKeepTheLowerExpert) {
  VT_REQUIRE_GPU();
  Streams s;
  uint64_t seed = 500;
  for (const auto& [E, k, dup] :
       {std::tuple<int64_t, int64_t, int64_t>{256, 8, 64}, {16, 4, 4}, {20, 4, 6}})
    for (int64_t T : {1, 5, 8}) {
      const RouterProblem p = exact_problem(s.cpu, T, 2048, E, k, seed++, dup);
      const RouterOut want = run_composed(s, p);
      const RouterOut got = run_fused(s, p, Toggle::kOn);
      expect_same(got, want, p.name() + " ties");
      const std::vector<float> l = floats(s.cpu, got.logits);
      for (int64_t t = 0; t < T; ++t) {
        const float* row = l.data() + t * E;
        std::vector<int32_t> order(static_cast<size_t>(E));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t a, int32_t b) { return row[a] > row[b]; });
        const int32_t* ids = got.ids.data<int32_t>() + t * k;
        EXPECT_TRUE(std::equal(ids, ids + k, order.begin())) << p.name() << " token " << t;
        // The premise: places 0 and 1 hold the same logit (row e repeats every dup rows).
        EXPECT_EQ(row[ids[0]], row[ids[1]]) << p.name() << " token " << t;
      }
    }
}

// The ticket word is reset by the kernel itself: back-to-back launches of different grids,
// and graph replays over new x, each give what an eager call on the same inputs gives. A
// word left non-zero would leave no block last, so no routing (the outputs stay poisoned).
TEST(CudaMoeRouter, RelaunchesAndGraphReplaysReuseTheTicket) {
  VT_REQUIRE_GPU();
  Streams s;
  const RouterProblem big = exact_problem(s.cpu, 8, 2048, 256, 8, 700);
  const RouterProblem small = exact_problem(s.cpu, 1, 256, 16, 4, 701);
  const RouterOut want_big = run_composed(s, big), want_small = run_composed(s, small);
  for (int i = 0; i < 3; ++i) {
    expect_same(run_fused(s, big, Toggle::kOn), want_big, "launch " + std::to_string(i));
    expect_same(run_fused(s, small, Toggle::kOn), want_small, "launch " + std::to_string(i));
  }
  cudatest::ScopedKernels kernels(s.gpu, [](KernelConfig& c) { c.moe_router = Toggle::kOn; });
  Tensor x = s.up(big.x), w = s.up(big.w);
  GpuOut o(s, big, DType::kBF16);
  s.gpu.synchronize();
  s.gpu.begin_capture();
  moe_router(s.gpu, x, w, big.k, o.logits, o.ids, o.weights);
  cuda::GraphExecPtr graph = s.gpu.end_capture();
  EXPECT_EQ(Stream::graph_kernel_nodes(*graph), 1);
  for (uint64_t r = 0; r < 3; ++r) {
    const RouterProblem p = exact_problem(s.cpu, 8, 2048, 256, 8, 710 + r);
    RouterProblem with_w = p;
    with_w.w = big.w;  // the captured router, new tokens
    copy(s.gpu, s.up(p.x), x);
    GpuOut poison(s, big, DType::kBF16);
    copy(s.gpu, poison.logits, o.logits);
    copy(s.gpu, poison.ids, o.ids);
    copy(s.gpu, poison.weights, o.weights);
    s.gpu.replay(*graph);
    expect_same(o.down(s), run_composed(s, with_w), "replay " + std::to_string(r));
  }
  graph.reset();
  s.gpu.synchronize();
  cuda::release_graph_pool(0);
}

// One kernel where the fused path applies under 1; the composition's kernels past
// kMoeRouterMaxTokens, for H % 8 != 0, under auto (the measured rule) and under 0.
TEST(CudaMoeRouter, CapturedDecodeRouterIsOneKernel) {
  VT_REQUIRE_GPU();
  Streams s;
  auto kernels = [&](int64_t T, int64_t H, Toggle t) {
    return captured_kernels(s, exact_problem(s.cpu, T, H, 256, 8, 800 + uint64_t(T)), t);
  };
  EXPECT_EQ(kernels(1, 2048, Toggle::kOn), 1);
  EXPECT_EQ(kernels(cuda::kMoeRouterMaxTokens, 2048, Toggle::kOn), 1);
  EXPECT_GT(kernels(cuda::kMoeRouterMaxTokens + 1, 2048, Toggle::kOn), 1);
  EXPECT_GT(kernels(1, 2044, Toggle::kOn), 1);
  EXPECT_GT(kernels(1, 2048, Toggle::kAuto), 1);
  EXPECT_GT(kernels(1, 2048, Toggle::kOff), 1);
  cuda::release_graph_pool(0);
}

#endif  // VTLLM_WITH_CUDA

}  // namespace
}  // namespace vt
