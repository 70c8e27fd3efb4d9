#include "vt/profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>

#include "base/error.h"
#include "vt/ops/gemm.h"
#include "vt/ops/norm.h"

namespace vt {
namespace {

Tensor random_f32(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

const Profiler::OpStat* find(const Profiler& p, const std::string& region, int64_t layer,
                             const std::string& op) {
  for (const Profiler::OpStat& st : p.ops())
    if (st.region == region && st.layer == layer && st.op == op) return &st;
  return nullptr;
}

TEST(Profiler, RecordsOutermostOpsByRegionAndLayerWithTheirCost) {
  Stream s(Device::cpu(), 2);
  const int64_t M = 5, K = 24, N = 7;
  const Tensor x = random_f32({M, K}, 1), w = random_f32({N, K}, 2), b = random_f32({K, N}, 3);
  const Tensor g = random_f32({K}, 4);
  Tensor out = Tensor::empty({M, N}, DType::kF32), normed = Tensor::empty({M, K}, DType::kF32);
  ProfileConfig pc;
  pc.time_ops = true;
  Profiler p(pc);
  p.attach(s);
  EXPECT_EQ(Profiler::of(s), &p);
  linear(s, x, w, out);  // outside a step: not recorded
  p.begin_step(s);
  {
    RegionScope attn(s, "attn", 3);
    linear(s, x, w, out);
    matmul(s, x, b, out);  // calls contiguous and linear inside: one "matmul" record
    {
      RegionScope inner(s, "inner", 4);
      rms_norm(s, x, g, 1e-6f, RmsNormKind::kPlain, normed);
    }
    linear(s, x, w, out);  // back in attn / 3
  }
  rms_norm(s, x, g, 1e-6f, RmsNormKind::kPlain, normed);
  const double step_ms = p.end_step(s);
  p.detach();
  EXPECT_EQ(Profiler::of(s), nullptr);

  ASSERT_EQ(p.ops().size(), 4u);
  const Profiler::OpStat* lin = find(p, "attn", 3, "linear");
  ASSERT_NE(lin, nullptr);
  EXPECT_EQ(lin->calls, 2);  // the matmul's inner linear is not counted
  // Two calls of x [M, K] . w [N, K]^T -> [M, N], f32: every operand once, 2 M N K.
  EXPECT_DOUBLE_EQ(lin->bytes, 2.0 * 4 * (M * K + N * K + M * N));
  EXPECT_DOUBLE_EQ(lin->flops, 2.0 * 2 * M * N * K);
  const Profiler::OpStat* mm = find(p, "attn", 3, "matmul");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->calls, 1);
  EXPECT_EQ(mm->flops, 0);  // matmul states no cost of its own
  ASSERT_NE(find(p, "inner", 4, "rms_norm"), nullptr);
  const Profiler::OpStat* top = find(p, "step", -1, "rms_norm");
  ASSERT_NE(top, nullptr);
  EXPECT_DOUBLE_EQ(top->bytes, 4.0 * (2 * M * K + K));
  EXPECT_EQ(p.steps(), 1);
  EXPECT_DOUBLE_EQ(p.step_us(), step_ms * 1e3);
  double sum = 0;
  for (const Profiler::OpStat& st : p.ops()) {
    EXPECT_GT(st.us, 0) << st.op;
    sum += st.us;
  }
  EXPECT_LE(sum, p.step_us());
}

TEST(Profiler, OpTimesSumToTheStepWhenTheStepIsOnlyOps) {
  Stream s(Device::cpu(), 2);
  const Tensor x = random_f32({128, 256}, 5), w = random_f32({256, 256}, 6);
  Tensor out = Tensor::empty({128, 256}, DType::kF32);
  ProfileConfig pc;
  pc.time_ops = true;
  Profiler p(pc);
  p.attach(s);
  for (int step = 0; step < 3; ++step) {
    p.begin_step(s);
    for (int i = 0; i < 8; ++i) linear(s, x, w, out);
    p.end_step(s);
  }
  ASSERT_EQ(p.ops().size(), 1u);
  EXPECT_EQ(p.ops()[0].calls, 24);
  // Everything between begin and end is an op: the sum is the step up to the scopes'
  // own bookkeeping (a few microseconds against milliseconds of GEMMs).
  EXPECT_LE(p.ops()[0].us, p.step_us());
  EXPECT_GE(p.ops()[0].us, 0.9 * p.step_us()) << p.ops()[0].us << " of " << p.step_us();
}

TEST(Profiler, RecordsNothingUnlessAttachedAndAsked) {
  Stream s(Device::cpu(), 1), other(Device::cpu(), 1);
  const Tensor x = random_f32({2, 8}, 7), w = random_f32({3, 8}, 8);
  Tensor out = Tensor::empty({2, 3}, DType::kF32);
  Profiler quiet;  // neither switch on: step times only
  quiet.attach(s);
  quiet.begin_step(s);
  linear(s, x, w, out);
  linear(other, x, w, out);
  quiet.end_step(s);
  EXPECT_TRUE(quiet.ops().empty());
  EXPECT_EQ(quiet.steps(), 1);
  ProfileConfig pc;
  pc.time_ops = true;
  Profiler second(pc);
  EXPECT_THROW(second.attach(s), vtllm::Error);  // one profiler per stream
  quiet.detach();
  second.attach(s);
  EXPECT_THROW(second.end_step(s), vtllm::Error);  // no step open
  second.begin_step(s);
  EXPECT_THROW(second.begin_step(s), vtllm::Error);
  linear(other, x, w, out);  // another stream's op
  second.end_step(s);
  EXPECT_TRUE(second.ops().empty());
}

TEST(Profiler, CountsDistinctExpertsPerRoutingCall) {
  Stream s(Device::cpu(), 1);
  ProfileConfig pc;
  pc.count_experts = true;
  Profiler p(pc);
  p.attach(s);
  std::mt19937 rng(9);
  const int64_t E = 32;
  std::vector<std::set<int32_t>> want;
  p.begin_step(s);
  for (int64_t layer = 0; layer < 4; ++layer) {
    const int64_t T = 1 + layer * 3, k = 4;
    Tensor ids = Tensor::empty({T, k}, DType::kI32);
    std::set<int32_t> distinct;
    for (int64_t i = 0; i < ids.numel(); ++i) {
      ids.data<int32_t>()[i] = int32_t(rng() % uint32_t(E));
      distinct.insert(ids.data<int32_t>()[i]);
    }
    want.push_back(distinct);
    RegionScope r(s, "moe", layer);
    p.note_routing(s, ids, E);
  }
  p.end_step(s);
  ASSERT_EQ(p.routing().size(), 4u);
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_EQ(p.routing()[l].layer, int64_t(l));
    EXPECT_EQ(p.routing()[l].tokens, 1 + int64_t(l) * 3);
    EXPECT_EQ(p.routing()[l].experts, E);
    EXPECT_EQ(p.routing()[l].distinct, int64_t(want[l].size()));
  }
  EXPECT_TRUE(p.ops().empty());  // the ids' copy is not an op of the step
  Tensor bad = Tensor::empty({1, 1}, DType::kI32);
  bad.data<int32_t>()[0] = int32_t(E);
  p.begin_step(s);
  EXPECT_THROW(p.note_routing(s, bad, E), vtllm::Error);
  p.end_step(s);
}

}  // namespace
}  // namespace vt
