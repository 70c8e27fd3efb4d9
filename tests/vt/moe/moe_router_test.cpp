// vt::moe_router (vt/ops/moe.h) on the CPU: exactly linear(x, router_w) -> logits, then
// moe_route(logits, k), checked against those two ops called one after the other (bytes
// of the logits, ids and weights), on random inputs in f32 and bf16 at decode and
// prefill token counts, and against the double-precision routing of the logits it wrote.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "vt/ops/copy.h"
#include "vt/ops/gemm.h"
#include "vt/ops/moe.h"

namespace vt {
namespace {

Tensor random_tensor(const Shape& shape, DType dt, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Tensor f = Tensor::empty(shape, DType::kF32);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = d(rng);
  Stream s(Device::cpu(), 1);
  return to_dtype(s, f, dt);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

std::vector<float> floats(Stream& s, const Tensor& t) {
  Tensor f = to_dtype(s, t, DType::kF32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

TEST(MoeRouter, IsLinearThenMoeRouteOnTheCpu) {
  Stream s(Device::cpu(), 3);
  uint32_t seed = 1;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (int64_t T : {1, 5, 8, 9, 40})
      for (const auto& [H, E, k] :
           {std::tuple<int64_t, int64_t, int64_t>{64, 16, 4}, {136, 20, 8}, {256, 256, 8}}) {
        SCOPED_TRACE(testing::Message()
                     << dtype_name(dt) << " T " << T << " H " << H << " E " << E << " k " << k);
        const Tensor x = random_tensor({T, H}, dt, 1.0f, seed++);
        const Tensor w = random_tensor({E, H}, dt, 0.1f, seed++);
        Tensor logits = Tensor::empty({T, E}, dt), ids = Tensor::empty({T, k}, DType::kI32),
               weights = Tensor::empty({T, k}, dt);
        moe_router(s, x, w, k, logits, ids, weights);
        Tensor want_logits = Tensor::empty({T, E}, dt),
               want_ids = Tensor::empty({T, k}, DType::kI32), want_w = Tensor::empty({T, k}, dt);
        linear(s, x, w, want_logits);
        moe_route(s, want_logits, k, want_ids, want_w);
        EXPECT_TRUE(same_bytes(logits, want_logits));
        EXPECT_TRUE(same_bytes(ids, want_ids));
        EXPECT_TRUE(same_bytes(weights, want_w));
        // And the routing is the top-k of its logits in double (no tie decides here with
        // continuous random logits): the composition was not skipped.
        const std::vector<float> l = floats(s, logits), got_w = floats(s, weights);
        for (int64_t t = 0; t < T; ++t) {
          std::vector<int32_t> order(static_cast<size_t>(E));
          std::iota(order.begin(), order.end(), 0);
          const float* row = l.data() + t * E;
          std::stable_sort(order.begin(), order.end(),
                           [&](int32_t a, int32_t b) { return row[a] > row[b]; });
          double top = 0;
          const double mx = row[order[0]];
          for (int64_t j = 0; j < k; ++j) top += std::exp(double(row[order[size_t(j)]]) - mx);
          for (int64_t j = 0; j < k; ++j) {
            EXPECT_EQ(ids.data<int32_t>()[t * k + j], order[size_t(j)]) << t << " " << j;
            const double want = std::exp(double(row[order[size_t(j)]]) - mx) / top;
            EXPECT_NEAR(got_w[size_t(t * k + j)], want, (dt == DType::kF32 ? 2e-6 : 4e-3) * want)
                << t << " " << j;
          }
        }
      }
}

TEST(MoeRouter, RejectsBadArguments) {
  Stream s(Device::cpu(), 1);
  const Tensor x = random_tensor({3, 32}, DType::kF32, 1.0f, 1);
  const Tensor w = random_tensor({8, 32}, DType::kF32, 1.0f, 2);
  Tensor logits = Tensor::empty({3, 8}, DType::kF32);
  Tensor ids = Tensor::empty({3, 2}, DType::kI32), weights = Tensor::empty({3, 2}, DType::kF32);
  EXPECT_NO_THROW(moe_router(s, x, w, 2, logits, ids, weights));
  const Tensor w_wide = random_tensor({8, 33}, DType::kF32, 1.0f, 3);
  EXPECT_THROW(moe_router(s, x, w_wide, 2, logits, ids, weights), vtllm::Error);
  Tensor logits_short = Tensor::empty({3, 7}, DType::kF32);
  EXPECT_THROW(moe_router(s, x, w, 2, logits_short, ids, weights), vtllm::Error);
  Tensor ids9 = Tensor::empty({3, 9}, DType::kI32), w9 = Tensor::empty({3, 9}, DType::kF32);
  EXPECT_THROW(moe_router(s, x, w, 9, logits, ids9, w9), vtllm::Error);      // k > E
  EXPECT_THROW(moe_router(s, x, w, 3, logits, ids, weights), vtllm::Error);  // ids [3, 2]
  Tensor ids64 = Tensor::empty({3, 2}, DType::kI64);
  EXPECT_THROW(moe_router(s, x, w, 2, logits, ids64, weights), vtllm::Error);
}

}  // namespace
}  // namespace vt
