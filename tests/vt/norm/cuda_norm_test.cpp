// The CUDA RMSNorm against the double-precision reference (the selfcheck cases) and
// against the CPU op on the same inputs. Skipped, not passed, without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "cuda_compare.h"
#include "vt/check/cases.h"
#include "vt/check/harness.h"
#include "vt/ops/copy.h"
#include "vt/ops/gdn.h"
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

// rms_norm over every launch shape of its kernel (cuda/norm/rms_norm_rows.cuh): rows held
// in one chunk per thread (32 threads for short rows, up to 1024 at 8192 columns) or two
// (up to 16384) or walked span by span past that; 16-byte accesses (cols % 8 == 0,
// aligned rows) or the scalar layout (odd cols; a column slice that starts off 16 bytes).
TEST(CudaNorm, RmsNormEveryBlockShapeMatchesCpuArm) {
  VT_REQUIRE_GPU();
  cudatest::Streams s;
  struct Case {
    DType x, out;
    RmsNormKind kind;
  };
  const Case cases[] = {{DType::kBF16, DType::kBF16, RmsNormKind::kPlain},
                        {DType::kBF16, DType::kBF16, RmsNormKind::kOnePlus},
                        {DType::kF32, DType::kF32, RmsNormKind::kOnePlus},
                        {DType::kF16, DType::kF32, RmsNormKind::kPlain}};
  uint64_t seed = 40;
  for (const Case& c : cases)
    for (int64_t rows : {1, 5})
      for (int64_t cols : {8, 100, 128, 4096, 8192, 8200, 12288, 16384, 16392, 20001, 24576})
        for (int layout = 0; layout < 3; ++layout) {  // contiguous, off-16-byte slice, in place
          if (layout == 1 && cols % 8 != 0) continue;
          const char* layout_name[] = {"contiguous", "slice", "in place"};
          const std::string what = std::string(dtype_name(c.x)) + "->" + dtype_name(c.out) +
                                   (c.kind == RmsNormKind::kPlain ? " plain" : " 1+w") + " [" +
                                   std::to_string(rows) + ", " + std::to_string(cols) + "] " +
                                   layout_name[layout];
          const Tensor wide = cudatest::randn({rows, cols + 3}, c.x, 2.0, seed++);
          const Tensor w = cudatest::randn({cols}, DType::kBF16, 0.5, seed++);
          const Tensor x =
              layout == 1 ? wide.slice(1, 3, 3 + cols) : contiguous(s.cpu, wide.slice(1, 0, cols));
          const DType out_dt = layout == 2 ? c.x : c.out;
          Tensor want = Tensor::empty({rows, cols}, out_dt);
          rms_norm(s.cpu, x, w, 1e-6f, c.kind, want);
          Tensor xg = layout == 1 ? s.up(wide).slice(1, 3, 3 + cols) : s.up(x), wg = s.up(w);
          Tensor got = layout == 2 ? xg : cudatest::poisoned_gpu(s, {rows, cols}, out_dt);
          rms_norm(s.gpu, xg, wg, 1e-6f, c.kind, got);
          // f32 out: f32 sums in different orders; narrow: one rounding (1+w) or a chain (plain).
          const double rel = out_dt == DType::kF32 ? 2e-5
                             : out_dt == DType::kF16
                                 ? (c.kind == RmsNormKind::kPlain ? 2.0 / 1024 : 1.0 / 1024)
                             : c.kind == RmsNormKind::kPlain ? cudatest::kBf16ChainRel
                                                             : cudatest::kBf16Rel;
          cudatest::expect_close(s, want, got, rel, out_dt == DType::kF32 ? 1e-6 : 0.0, what);
        }
}

// l2_normalize and gated_rms_norm: a warp holds a row of up to 128 elements (64, 128)
// and walks longer ones span by span (130: a partial second span; 256), for decode
// (1 row, 32 heads) and prefill-like row counts.
TEST(CudaNorm, L2AndGatedEveryRowLengthMatchCpuArm) {
  VT_REQUIRE_GPU();
  cudatest::Streams s;
  uint64_t seed = 80;
  for (int64_t rows : {1, 32, 37, 1000})
    for (int64_t cols : {64, 128, 130, 256}) {
      const std::string shape = " [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
      const Tensor x = cudatest::randn({rows, cols}, DType::kBF16, 1.5, seed++);
      Tensor l2 = Tensor::empty({rows, cols}, DType::kF32);
      l2_normalize(s.cpu, x, 1e-6f, l2);
      Tensor l2_g = cudatest::poisoned_gpu(s, {rows, cols}, DType::kF32);
      l2_normalize(s.gpu, s.up(x), 1e-6f, l2_g);
      cudatest::expect_close(s, l2, l2_g, 1e-5, 1e-6, "l2_normalize" + shape);

      const Tensor o = cudatest::randn({rows, cols}, DType::kF32, 1.0, seed++);
      const Tensor z = cudatest::randn({rows, cols}, DType::kBF16, 2.0, seed++);
      const Tensor nw = cudatest::randn({cols}, DType::kBF16, 1.0, seed++);
      for (DType out_dt : {DType::kBF16, DType::kF32}) {
        Tensor y = Tensor::empty({rows, cols}, out_dt);
        gated_rms_norm(s.cpu, o, z, nw, 1e-6f, y);
        Tensor y_g = cudatest::poisoned_gpu(s, {rows, cols}, out_dt);
        gated_rms_norm(s.gpu, s.up(o), s.up(z), s.up(nw), 1e-6f, y_g);
        const bool narrow = out_dt != DType::kF32;
        cudatest::expect_close(s, y, y_g, narrow ? cudatest::kBf16ChainRel : 2e-5, 1e-6,
                               std::string("gated_rms_norm -> ") + dtype_name(out_dt) + shape);
      }
    }
}

}  // namespace
}  // namespace vt
