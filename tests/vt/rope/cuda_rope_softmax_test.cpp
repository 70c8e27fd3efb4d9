// The CUDA arms of softmax, rope_neox and rope_cos_sin_1d (vt/ops/activation.h,
// vt/ops/rope.h) against their CPU arms at model sizes. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "vt/ops/activation.h"
#include "vt/ops/copy.h"
#include "vt/ops/rope.h"

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::kBf16Rel;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::Streams;

constexpr int64_t kVocab = 151936;  // Qwen3 / Qwen3.5's logits row

// Softmax vs the CPU arm: x - max is the same f32 value on both and the exps differ by
// a few ulp, but the CPU's sequential f32 sum of 151936 terms drops low bits of the many
// small ones: up to 2.7e-4 relative over 200 random rows (worst at logits ~ N(0, 4); the
// kernel's per-thread and tree sum order, emulated on the host: 4e-7). So f32 outputs
// agree within 1e-3, and the double check below is the tight one. Entries below 1e-6 of
// the rms are compared absolutely (subnormal exps, where one ulp is a large relative error).
constexpr double kSoftmaxRel = 1e-3, kSoftmaxAbs = 1e-6;

// The double softmax of x's rows with the f32 x - max both arms compute; the CUDA arm's
// tree sum must land within 5e-6 of it (expf 2 ulp, the sum, the reciprocal, the product).
void expect_near_double_softmax(Streams& s, const Tensor& x_host, const Tensor& got,
                                const std::string& what) {
  Tensor x = to_dtype(s.cpu, contiguous(s.cpu, x_host), DType::kF32);
  Tensor g = to_dtype(s.cpu, s.down(got), DType::kF32);
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data<float>() + r * cols;
    float mx = -INFINITY;
    for (int64_t i = 0; i < cols; ++i) mx = std::max(mx, xr[i]);
    double sum = 0;
    for (int64_t i = 0; i < cols; ++i) sum += std::exp(double(xr[i] - mx));
    double rms = 0;
    std::vector<double> ref(size_t(cols), 0.0);
    for (int64_t i = 0; i < cols; ++i) {
      ref[size_t(i)] = std::exp(double(xr[i] - mx)) / sum;
      rms += ref[size_t(i)] * ref[size_t(i)];
    }
    rms = std::sqrt(rms / double(cols));
    for (int64_t i = 0; i < cols; ++i) {
      const double want = ref[size_t(i)], have = g.data<float>()[r * cols + i];
      const double e = std::fabs(have - want) / (5e-6 * want + kSoftmaxAbs * rms + 1e-38);
      worst = std::isnan(have) ? INFINITY : std::max(worst, e);
    }
  }
  EXPECT_LE(worst, 1.0) << what << ": worst error over (5e-6 rel + 1e-6 rms) allowance";
}

TEST(CudaSoftmax, MatchesCpuOnVocabularyRows) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Case {
    DType in, out;
    int64_t rows;
    double scale;
    bool in_place;
  };
  // Logits ~ N(0, 4) (typical), and N(0, 30) (most exps underflow: max subtraction matters).
  const Case cases[] = {{DType::kF32, DType::kF32, 8, 4.0, false},
                        {DType::kBF16, DType::kF32, 64, 4.0, false},
                        {DType::kBF16, DType::kBF16, 5, 4.0, false},
                        {DType::kF32, DType::kF32, 3, 30.0, true},
                        {DType::kBF16, DType::kBF16, 3, 30.0, true}};
  uint64_t seed = 40;
  for (const Case& c : cases) {
    const std::string what = std::string("softmax ") + dtype_name(c.in) + "[" +
                             std::to_string(c.rows) + ", 151936] -> " + dtype_name(c.out) +
                             (c.in_place ? " in place" : "") + " scale " + std::to_string(c.scale);
    Tensor x = randn({c.rows, kVocab}, c.in, c.scale, seed++);
    Tensor want = Tensor::empty({c.rows, kVocab}, c.out);
    softmax(s.cpu, x, want);
    Tensor got = c.in_place ? s.up(x) : poisoned_gpu(s, {c.rows, kVocab}, c.out);
    softmax(s.gpu, c.in_place ? got : s.up(x), got);
    expect_close(s, want, got, c.out == DType::kF32 ? kSoftmaxRel : kBf16Rel, kSoftmaxAbs, what);
    if (c.out == DType::kF32) expect_near_double_softmax(s, x, got, what);
  }
}

TEST(CudaSoftmax, TwoLevelRowsMatchCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  // [T, H, D] per-head views of column slices of [T, W] tensors: attention-like rows.
  const int64_t T = 33, H = 6, D = 517, W = H * D + 11;
  Tensor x = randn({T, W}, DType::kBF16, 10.0, 50), out = randn({T, W}, DType::kF32, 1.0, 51);
  Tensor out_g = s.up(out);
  const auto heads = [&](const Tensor& t, int64_t off) {
    return t.slice(1, off, off + H * D).reshape({T, H, D});
  };
  Tensor oc = heads(out, 7), og = heads(out_g, 7);
  softmax(s.cpu, heads(x, 11), oc);
  softmax(s.gpu, heads(s.up(x), 11), og);
  // The whole buffers: the views within the softmax tolerance, the other columns equal.
  expect_close(s, out, out_g, kSoftmaxRel, 0, "softmax bf16 heads of a column slice -> f32 heads");
}

// A cos/sin table of R = rd for random positions in [0, 262144], theta 1e7; its values
// rounded to dt (the model rounds the table to the activation dtype).
Tensor table_for(Streams& s, int64_t tokens, int64_t rd, DType dt, uint64_t seed) {
  Tensor pos = Tensor::empty({tokens}, DType::kI64);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, 262144);
  for (int64_t t = 0; t < tokens; ++t) pos.data<int64_t>()[t] = pick(rng);
  Tensor table = rope_cos_sin_1d(pos, rd, 1e7);
  return to_dtype(s.cpu, to_dtype(s.cpu, table, dt), DType::kF32);
}

// rope_neox is the CPU's arithmetic operation for operation (no FMA contraction): the
// outputs must be equal bit for bit (tolerance 0).
TEST(CudaRope, NeoxMatchesCpuBitForBit) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t T = 300, H = 16, D = 256;
  uint64_t seed = 60;
  for (DType dt : {DType::kBF16, DType::kF32})
    for (int64_t rd : {64, 256})
      for (bool in_place : {false, true}) {
        const std::string what = std::string("rope_neox ") + dtype_name(dt) +
                                 "[300, 16, 256] rotary_dim " + std::to_string(rd) +
                                 (in_place ? " in place" : "");
        Tensor cs = table_for(s, T, rd, dt, seed++), cs_g = s.up(cs);
        Tensor x = randn({T, H, D}, dt, 2.0, seed++);
        Tensor want = Tensor::empty({T, H, D}, dt);
        if (in_place) {
          copy(s.cpu, x, want);
          rope_neox(s.cpu, want, cs, want);
        } else {
          rope_neox(s.cpu, x, cs, want);
        }
        Tensor got = in_place ? s.up(x) : poisoned_gpu(s, {T, H, D}, dt);
        rope_neox(s.gpu, in_place ? got : s.up(x), cs_g, got);
        expect_close(s, want, got, 0, 0, what);
      }
}

// RopeMath::kF32 on bf16 (the vision tower's rotary, in place on a fused qkv's q slice
// of 16 heads of 72, or its q and k slices as 32 heads, full rotary; and out of place):
// the CPU's f32 arithmetic, one rounding.
TEST(CudaRope, NeoxF32MathOnBf16MatchesCpuBitForBit) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t T = 257, H = 16, D = 72, W = 3 * H * D;
  Tensor fused = randn({T, W}, DType::kBF16, 2.0, 80), fused_g = s.up(fused);
  Tensor cs = randn({T, D}, DType::kF32, 1.0, 81), cs_g = s.up(cs);
  const auto q = [&](const Tensor& t) { return t.slice(1, 0, H * D).reshape({T, H, D}); };
  Tensor want = Tensor::empty({T, H, D}, DType::kBF16);
  rope_neox(s.cpu, q(fused), cs, want, RopeMath::kF32);
  Tensor got = poisoned_gpu(s, {T, H, D}, DType::kBF16);
  rope_neox(s.gpu, q(fused_g), cs_g, got, RopeMath::kF32);
  expect_close(s, want, got, 0, 0, "rope_neox f32 math bf16[257, 16, 72] -> bf16");
  Tensor qc = q(fused), qg = q(fused_g);
  rope_neox(s.cpu, qc, cs, qc, RopeMath::kF32);
  rope_neox(s.gpu, qg, cs_g, qg, RopeMath::kF32);
  expect_close(s, fused, fused_g, 0, 0,
               "rope_neox f32 math in place on a slice (other columns too)");
  // q and k together, as the tower rotates them: 2 H heads over the first 2 H D columns.
  const auto qk = [&](const Tensor& t) { return t.slice(1, 0, 2 * H * D).reshape({T, 2 * H, D}); };
  Tensor qkc = qk(fused), qkg = qk(fused_g);
  rope_neox(s.cpu, qkc, cs, qkc, RopeMath::kF32);
  rope_neox(s.gpu, qkg, cs_g, qkg, RopeMath::kF32);
  expect_close(s, fused, fused_g, 0, 0, "rope_neox f32 math in place on q and k together");
}

TEST(CudaRope, NeoxOnFusedProjectionSlicesMatchesCpuBitForBit) {
  VT_REQUIRE_GPU();
  Streams s;
  // q heads as a column slice of a fused [T, W] projection output (two row strides), in
  // place, and the same slice rotated into a separate f32 tensor (a dtype change: the
  // passthrough dims widen, the rotation is f32 arithmetic on the bf16 values).
  const int64_t T = 77, H = 16, D = 256, rd = 64, W = H * D + 2 * 4 * D;
  Tensor fused = randn({T, W}, DType::kBF16, 2.0, 70), fused_g = s.up(fused);
  Tensor cs = table_for(s, T, rd, DType::kBF16, 71), cs_g = s.up(cs);
  const auto q = [&](const Tensor& t) {
    return t.slice(1, 4 * D, 4 * D + H * D).reshape({T, H, D});
  };
  Tensor want_f32 = Tensor::empty({T, H, D}, DType::kF32);
  rope_neox(s.cpu, q(fused), cs, want_f32);
  Tensor got_f32 = poisoned_gpu(s, {T, H, D}, DType::kF32);
  rope_neox(s.gpu, q(fused_g), cs_g, got_f32);
  expect_close(s, want_f32, got_f32, 0, 0, "rope_neox bf16 slice -> f32");
  Tensor qc = q(fused), qg = q(fused_g);
  rope_neox(s.cpu, qc, cs, qc);
  rope_neox(s.gpu, qg, cs_g, qg);
  expect_close(s, fused, fused_g, 0, 0, "rope_neox in place on a slice (other columns too)");
}

// The device table: the same f32 inv_freq and angle; CUDA's double sincos (2 ulp) may
// round to the neighbouring f32 where glibc's double lands next to an f32 rounding
// boundary (~1e-8 of entries): at most 2^-24 apart, and at most 1 in 10^5 entries unequal.
TEST(CudaRope, CosSinTableMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t n = 262145;  // every position 0 .. 262144
  for (DType pdt : {DType::kI32, DType::kI64})
    for (int64_t rd : {64, 128}) {
      Tensor pos = Tensor::empty({n}, pdt);
      for (int64_t t = 0; t < n; ++t) {
        if (pdt == DType::kI32)
          pos.data<int32_t>()[t] = int32_t(t);
        else
          pos.data<int64_t>()[t] = t;
      }
      Tensor want = rope_cos_sin_1d(pos, rd, 1e7);
      Tensor got_g = poisoned_gpu(s, {n, rd}, DType::kF32);
      rope_cos_sin_1d(s.gpu, s.up(pos), 1e7, got_g);
      Tensor got = s.down(got_g);
      int64_t unequal = 0;
      double worst = 0;
      for (int64_t i = 0; i < want.numel(); ++i) {
        const float a = want.data<float>()[i], b = got.data<float>()[i];
        if (a != b || std::isnan(b)) ++unequal;
        worst = std::isnan(b) ? INFINITY : std::max(worst, std::fabs(double(a) - double(b)));
      }
      const std::string what = std::string("rope_cos_sin_1d positions ") + dtype_name(pdt) +
                               "[262145] rotary_dim " + std::to_string(rd) + " theta 1e7";
      EXPECT_LE(worst, std::ldexp(1.0, -24)) << what;
      EXPECT_LE(unequal, want.numel() / 100000)
          << what << ": " << unequal << " of " << want.numel() << " entries unequal";
    }
  // The op refuses a table wider than the kernel's inv_freq parameter, by name.
  Tensor pos4 = Tensor::empty({4}, DType::kI32);
  std::memset(pos4.data_ptr(), 0, pos4.nbytes());
  Tensor pos = s.up(pos4), wide = poisoned_gpu(s, {4, 1026}, DType::kF32);
  EXPECT_THROW(rope_cos_sin_1d(s.gpu, pos, 1e7, wide), vtllm::Error);
}

}  // namespace
}  // namespace vt
