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

// Rows of two strides (vt/ops/args.h): x and out [T, H, D] per-head views of column
// slices of wider [T, W] tensors, as the GDN layer passes them; the CUDA arms against
// the CPU arms on the same views, and the columns outside out's view left untouched.
TEST(CudaNorm, TwoLevelRowsMatchCpuArm) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Stream c(Device::cpu()), g(Device::cuda(0));
  const int64_t T = 19, H = 12, D = 128, W = H * D + 72, off = 40;
  Tensor xf = Tensor::empty({T, W}, DType::kF32), wf = Tensor::empty({D}, DType::kF32);
  std::mt19937 rng(4);
  std::normal_distribution<float> d(0.0f, 1.5f);
  for (int64_t i = 0; i < xf.numel(); ++i) xf.data<float>()[i] = d(rng);
  for (int64_t i = 0; i < wf.numel(); ++i) wf.data<float>()[i] = d(rng);
  Tensor x = to_dtype(c, xf, DType::kBF16), w = to_dtype(c, wf, DType::kBF16);
  Tensor xg = to_device(g, x, g.device()), wg = to_device(g, w, g.device());
  const auto heads = [&](const Tensor& t) {
    return t.slice(1, off, off + H * D).reshape({T, H, D});
  };
  for (int op = 0; op < 3; ++op) {  // rms_norm plain, rms_norm 1+w, l2_normalize
    Tensor cpu_wide = Tensor::empty({T, W}, DType::kF32);
    for (int64_t i = 0; i < cpu_wide.numel(); ++i) cpu_wide.data<float>()[i] = -7.0f;
    Tensor gpu_wide = to_device(g, cpu_wide, g.device());
    Tensor cpu_out = heads(cpu_wide), gpu_out = heads(gpu_wide);
    if (op < 2) {
      const RmsNormKind kind = op == 0 ? RmsNormKind::kPlain : RmsNormKind::kOnePlus;
      rms_norm(c, heads(x), w, 1e-6f, kind, cpu_out);
      rms_norm(g, heads(xg), wg, 1e-6f, kind, gpu_out);
    } else {
      l2_normalize(c, heads(x), 1e-6f, cpu_out);
      l2_normalize(g, heads(xg), 1e-6f, gpu_out);
    }
    Tensor back = to_device(g, gpu_wide, Device::cpu());
    double worst = 0;
    for (int64_t i = 0; i < back.numel(); ++i) {
      const float a = cpu_wide.data<float>()[i], b = back.data<float>()[i];
      ASSERT_FALSE(std::isnan(b)) << i;
      const int64_t col = i % W;
      if (col < off || col >= off + H * D) {
        ASSERT_EQ(b, -7.0f) << "column " << col << " outside the view was written";
        continue;
      }
      worst = std::max(worst, double(std::fabs(a - b)) / (std::fabs(a) + 1e-6));
    }
    EXPECT_LT(worst, 2e-5) << "op " << op;
  }
}

}  // namespace
}  // namespace vt
