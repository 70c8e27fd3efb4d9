// The CUDA arms of the elementwise and copy/fill ops against their CPU twins on random
// inputs at model sizes. Skipped without a GPU.
#include <gtest/gtest.h>

#include "cuda_compare.h"
#include "vt/ops/activation.h"
#include "vt/ops/fill.h"
#include "vt/ops/norm.h"

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::kBf16Rel;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::Streams;

TEST(CudaElementwise, MatchCpuAtModelSizes) {
  VT_REQUIRE_GPU();
  Streams s;
  // silu_and_mul over Qwen3.5-27B's gate_up (intermediate 17408), bf16 -> bf16.
  Tensor x = randn({9, 2 * 17408}, DType::kBF16, 2.0, 1);
  Tensor want = Tensor::empty({9, 17408}, DType::kBF16);
  silu_and_mul(s.cpu, x, want);
  Tensor got = poisoned_gpu(s, {9, 17408}, DType::kBF16);
  silu_and_mul(s.gpu, s.up(x), got);
  expect_close(s, want, got, cudatest::kBf16ChainRel, 0, "silu_and_mul bf16[9, 34816]");

  // add and mul, bf16 + f32 -> bf16, and in place on a strided view.
  Tensor a = randn({33, 5120}, DType::kBF16, 1.0, 2), b = randn({33, 5120}, DType::kF32, 1.0, 3);
  for (bool is_add : {true, false}) {
    Tensor w = Tensor::empty({33, 5120}, DType::kBF16);
    Tensor gg = poisoned_gpu(s, {33, 5120}, DType::kBF16);
    Tensor ag = s.up(a), bg = s.up(b);
    if (is_add) {
      add(s.cpu, a, b, w);
      add(s.gpu, ag, bg, gg);
    } else {
      mul(s.cpu, a, b, w);
      mul(s.gpu, ag, bg, gg);
    }
    expect_close(s, w, gg, kBf16Rel, 0, is_add ? "add" : "mul");
  }
  Tensor wide = randn({40, 300}, DType::kF32, 3.0, 4);
  Tensor view_c = wide.slice(1, 10, 266), wide_g = s.up(wide);
  Tensor view_g = wide_g.slice(1, 10, 266);
  sigmoid(s.cpu, view_c, view_c);
  sigmoid(s.gpu, view_g, view_g);
  expect_close(s, wide, wide_g, 1e-6, 0,
               "sigmoid in place on a column slice (untouched columns too)");

  // l2_normalize per GDN key head (a column slice of the conv output), f32.
  Tensor act = randn({70, 10240}, DType::kF32, 1.0, 5), act_g = s.up(act);
  Tensor qc = Tensor::empty({70, 128}, DType::kF32), qg = poisoned_gpu(s, {70, 128}, DType::kF32);
  l2_normalize(s.cpu, act.slice(1, 256, 384), 1e-6f, qc);
  l2_normalize(s.gpu, act_g.slice(1, 256, 384), 1e-6f, qg);
  expect_close(s, qc, qg, 1e-5, 1e-6, "l2_normalize f32 head slice");
}

// Rows of two strides (vt/ops/args.h): [T, H, D] per-head views of column slices of
// wider [T, W] tensors as inputs and outputs of the elementwise ops; untouched columns
// compared too (the whole wide buffers are compared).
TEST(CudaElementwise, TwoLevelRowsMatchCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t T = 21, H = 8, D = 96, W = 2 * H * D + 40;
  const auto heads = [&](const Tensor& t, int64_t off, int64_t d) {
    return t.slice(1, off, off + H * d).reshape({T, H, d});
  };
  Tensor x = randn({T, W}, DType::kBF16, 2.0, 30), xg = s.up(x);
  Tensor out = randn({T, W}, DType::kBF16, 1.0, 31), out_g = s.up(out);
  // silu_and_mul: x heads [T, H, 2D] at column 40, out heads [T, H, D] at column 24.
  Tensor oc = heads(out, 24, D), og = heads(out_g, 24, D);
  silu_and_mul(s.cpu, heads(x, 40, 2 * D), oc);
  silu_and_mul(s.gpu, heads(xg, 40, 2 * D), og);
  expect_close(s, out, out_g, cudatest::kBf16ChainRel, 0, "silu_and_mul two-level in and out");
  // sigmoid in place on a two-level view.
  Tensor sc = heads(x, 8, D), sg = heads(xg, 8, D);
  sigmoid(s.cpu, sc, sc);
  sigmoid(s.gpu, sg, sg);
  expect_close(s, x, xg, kBf16Rel, 0, "sigmoid in place on a two-level view");
  // add and mul: a two-level (columns sigmoid left alone), b contiguous, out two-level.
  Tensor b = randn({T, H, D}, DType::kF32, 1.0, 32), bg = s.up(b);
  for (bool is_add : {true, false}) {
    Tensor ac = heads(x, 800, D), ag = heads(xg, 800, D);
    Tensor rc = heads(out, 800, D), rg = heads(out_g, 800, D);
    if (is_add) {
      add(s.cpu, ac, b, rc);
      add(s.gpu, ag, bg, rg);
    } else {
      mul(s.cpu, ac, b, rc);
      mul(s.gpu, ag, bg, rg);
    }
    // One rounding of the same f32 sum or product: the view within one bf16 ulp.
    expect_close(s, rc, contiguous(s.gpu, rg), kBf16Rel, 0,
                 is_add ? "add two-level" : "mul two-level");
  }
  // The whole buffer: silu_and_mul's and add's views (chain tolerance) and the columns
  // outside them (equal bytes).
  expect_close(s, out, out_g, cudatest::kBf16ChainRel, 0, "out after silu_and_mul, add, mul");
}

TEST(CudaCopy, StridedConversionsAndFill) {
  VT_REQUIRE_GPU();
  Streams s;
  Tensor x = randn({64, 96}, DType::kF32, 1.0, 6), xg = s.up(x);
  Tensor want = to_dtype(s.cpu, x.transpose(0, 1), DType::kBF16);
  Tensor got = poisoned_gpu(s, {96, 64}, DType::kBF16);
  copy(s.gpu, xg.transpose(0, 1), got);
  expect_close(s, want, got, 0, 0, "f32 transposed -> bf16 (bit-exact rounding)");

  Tensor ints = Tensor::empty({1000}, DType::kI64);
  for (int64_t i = 0; i < 1000; ++i) ints.data<int64_t>()[i] = i * 7919 - 400000;
  Tensor ig = s.up(ints), i32 = poisoned_gpu(s, {1000}, DType::kI32);
  copy(s.gpu, ig, i32);
  Tensor back = s.down(i32);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(back.data<int32_t>()[i], int32_t(i * 7919 - 400000));

  Tensor state = s.up(randn({5, 48, 128, 128}, DType::kF32, 1.0, 7));
  Tensor slot = state.select(0, 3);
  zero(s.gpu, slot);
  Tensor host = s.down(state);
  const int64_t per = 48 * 128 * 128;
  for (int64_t i = 0; i < 5 * per; ++i) {
    const float v = host.data<float>()[i];
    ASSERT_EQ(v == 0.0f, i / per == 3) << "element " << i;
  }
}

}  // namespace
}  // namespace vt
