// The CUDA RMSNorm against the double-precision reference (the selfcheck cases) and
// against the CPU op on the same inputs. Skipped, not passed, without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "vt/check/cases.h"
#include "vt/check/harness.h"
#include "vt/ops/copy.h"
#include "vt/ops/norm.h"

namespace vt {
namespace {

TEST(CudaNorm, RmsNormMatchesDoubleReference) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Stream g(Device::cuda(0));
  check::Harness h(g, 11);
  check::check_norms(h);
  int ran = 0;
  for (const check::Result& r : h.results()) {
    if (r.skipped) continue;
    ++ran;
    EXPECT_TRUE(r.passed) << r.op << " (" << r.config << "): err " << r.err << " " << r.note;
  }
  EXPECT_GT(ran, 0);
}

TEST(CudaNorm, RmsNormMatchesCpuArm) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Stream c(Device::cpu()), g(Device::cuda(0));
  for (RmsNormKind kind : {RmsNormKind::kPlain, RmsNormKind::kOnePlus}) {
    const int64_t rows = 37, cols = 2049;  // odd: exercises the tail of every thread's loop
    Tensor xf = Tensor::empty({rows, cols}, DType::kF32), wf = Tensor::empty({cols}, DType::kF32);
    std::mt19937 rng(3);
    std::normal_distribution<float> d(0.0f, 1.5f);
    for (int64_t i = 0; i < xf.numel(); ++i) xf.data<float>()[i] = d(rng);
    for (int64_t i = 0; i < wf.numel(); ++i) wf.data<float>()[i] = d(rng);
    Tensor x = to_dtype(c, xf, DType::kBF16), w = to_dtype(c, wf, DType::kBF16);
    Tensor cpu_out = Tensor::empty({rows, cols}, DType::kF32);
    rms_norm(c, x, w, 1e-6f, kind, cpu_out);
    Tensor xg = to_device(g, x, g.device()), wg = to_device(g, w, g.device());
    Tensor gpu_out = Tensor::empty({rows, cols}, DType::kF32, g.device());
    rms_norm(g, xg, wg, 1e-6f, kind, gpu_out);
    Tensor back = to_device(g, gpu_out, Device::cpu());
    double worst = 0;
    for (int64_t i = 0; i < back.numel(); ++i) {
      float a = cpu_out.data<float>()[i], b = back.data<float>()[i];
      ASSERT_FALSE(std::isnan(b)) << i;
      worst = std::max(worst, double(std::fabs(a - b)) / (std::fabs(a) + 1e-6));
    }
    // Both sum 2049 squares in f32 in different orders.
    EXPECT_LT(worst, 2e-5) << (kind == RmsNormKind::kPlain ? "plain" : "1+w");
  }
}

}  // namespace
}  // namespace vt
