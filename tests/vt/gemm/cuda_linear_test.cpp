// The CUDA linear op (the dispatch: cuBLASLt or the skinny kernel) against the CPU op at
// model shapes, mixed dtypes, bias (in cuBLASLt's epilogue when it has out's dtype, else
// added after) and strided x; linear_gelu's epilogue and its fallback. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cuda_compare.h"
#include "vt/ops/gemm.h"

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::kBf16Rel;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::Streams;

TEST(CudaLinear, MatchesCpuAtModelShapes) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Case {
    int64_t m, k, n;
    DType x, w, out;
    bool bias, strided_x;
    DType bias_dtype = DType::kF32;
  };
  // Qwen3.5-27B: hidden 5120, q_proj 5120 -> 12288 (24 heads x 2 x 256), MLP down 17408 -> 5120.
  const Case cases[] = {
      {1, 5120, 12288, DType::kBF16, DType::kBF16, DType::kBF16, false, false},
      {64, 17408, 5120, DType::kBF16, DType::kBF16, DType::kBF16, false, false},
      {130, 1024, 3072, DType::kBF16, DType::kBF16, DType::kF32, false, true},
      {37, 1024, 1000, DType::kF32, DType::kF32, DType::kF32, true, false},
      {5, 512, 700, DType::kF32, DType::kBF16, DType::kBF16, true, false},
      // The vision tower's qkv and fc1 (bias in the epilogue), one through a strided x.
      {4096, 1152, 3456, DType::kBF16, DType::kBF16, DType::kBF16, true, false, DType::kBF16},
      {300, 1152, 4304, DType::kBF16, DType::kBF16, DType::kBF16, true, true, DType::kBF16},
      {24, 96, 40, DType::kBF16, DType::kBF16, DType::kF32, true, false},
  };
  uint64_t seed = 20;
  for (const Case& c : cases) {
    const std::string what = "linear x " + std::string(dtype_name(c.x)) + shape_str({c.m, c.k}) +
                             " w " + dtype_name(c.w) + shape_str({c.n, c.k}) + " -> " +
                             dtype_name(c.out) +
                             (c.bias ? std::string(" +bias ") + dtype_name(c.bias_dtype) : "") +
                             (c.strided_x ? " strided x" : "");
    Tensor xbig = randn({c.m, c.k + (c.strided_x ? 64 : 0)}, c.x, 1.0, seed++);
    Tensor x = xbig.slice(1, 0, c.k);
    Tensor w = randn({c.n, c.k}, c.w, 1.0 / std::sqrt(double(c.k)), seed++);
    Tensor bias = c.bias ? randn({c.n}, c.bias_dtype, 1.0, seed++) : Tensor();
    Tensor want = Tensor::empty({c.m, c.n}, c.out);
    linear(s.cpu, x, w, want, bias);
    Tensor got = poisoned_gpu(s, {c.m, c.n}, c.out);
    Tensor xg = s.up(xbig).slice(1, 0, c.k);
    linear(s.gpu, xg, s.up(w), got, c.bias ? s.up(bias) : Tensor());
    // f32 sums of K products in different orders: ~sqrt(K) 2^-24 of the output scale.
    expect_close(s, want, got, c.out == DType::kF32 ? 1e-5 : kBf16Rel, 2e-5, what);
  }
}

// linear_gelu on CUDA against the CPU op: the tower's fc1 (bf16 out, bf16 bias: cuBLASLt's
// GELU_BIAS epilogue), f32 out with an f32 bias and without one (the GELU epilogues, held to
// f32 sums so a GELU other than the tanh form shows: the forms differ by ~1e-4 at |x| = 2),
// the erf form and mixed dtypes (the f32 product and the gelu pass).
TEST(CudaLinear, LinearGeluMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Case {
    int64_t m, k, n;
    DType x, w, out;
    GeluKind kind;
    bool bias;
  };
  const Case cases[] = {
      {4096, 1152, 4304, DType::kBF16, DType::kBF16, DType::kBF16, GeluKind::kTanh, true},
      {300, 1152, 4304, DType::kBF16, DType::kBF16, DType::kF32, GeluKind::kTanh, true},
      {77, 256, 520, DType::kBF16, DType::kBF16, DType::kF32, GeluKind::kTanh, false},
      {1024, 4608, 4608, DType::kBF16, DType::kBF16, DType::kBF16, GeluKind::kErf, true},
      {33, 96, 72, DType::kF32, DType::kBF16, DType::kBF16, GeluKind::kTanh, true},
  };
  uint64_t seed = 40;
  for (const Case& c : cases) {
    const std::string what =
        std::string("linear_gelu ") + (c.kind == GeluKind::kTanh ? "tanh " : "erf ") +
        dtype_name(c.x) + shape_str({c.m, c.k}) + " w " + dtype_name(c.w) + shape_str({c.n, c.k}) +
        " -> " + dtype_name(c.out) + (c.bias ? " +bias" : "");
    const Tensor x = randn({c.m, c.k}, c.x, 1.0, seed++);
    const Tensor w = randn({c.n, c.k}, c.w, 1.0 / std::sqrt(double(c.k)), seed++);
    const Tensor bias = c.bias ? randn({c.n}, c.out, 1.0, seed++) : Tensor();
    Tensor want = Tensor::empty({c.m, c.n}, c.out);
    linear_gelu(s.cpu, x, w, bias, c.kind, want);
    Tensor got = poisoned_gpu(s, {c.m, c.n}, c.out);
    linear_gelu(s.gpu, s.up(x), s.up(w), c.bias ? s.up(bias) : Tensor(), c.kind, got);
    expect_close(s, want, got, c.out == DType::kF32 ? 1e-5 : kBf16Rel, 2e-5, what);
  }
}

}  // namespace
}  // namespace vt
