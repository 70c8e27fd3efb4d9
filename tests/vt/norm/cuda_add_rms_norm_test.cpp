// The CUDA add_rms_norm against the CPU op on the same random inputs: the updated
// residual byte for byte (one f32 add, one rounding on both), out within the norm's
// tolerance (f32 sums in different orders). Skipped, not passed, without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cuda_compare.h"
#include "vt/ops/activation.h"
#include "vt/ops/norm.h"

namespace vt {
namespace {

using cudatest::Streams;

struct Case {
  DType residual, delta, out;
};

void expect_same_bytes(Streams& s, const Tensor& want, const Tensor& got_gpu,
                       const std::string& what) {
  const Tensor got = s.down(got_gpu);
  ASSERT_EQ(want.nbytes(), got.nbytes()) << what;
  EXPECT_EQ(std::memcmp(want.data_ptr(), got.data_ptr(), want.nbytes()), 0) << what;
}

// One [rows, cols] case on both backends: the residual byte for byte, out within the
// norm's tolerance.
void check_case(Streams& s, const Case& c, RmsNormKind kind, int64_t rows, int64_t cols,
                uint64_t seed) {
  const std::string what = std::string(dtype_name(c.residual)) + "/" + dtype_name(c.delta) + "->" +
                           dtype_name(c.out) + (kind == RmsNormKind::kPlain ? " plain" : " 1+w") +
                           " [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
  const Tensor x0 = cudatest::randn({rows, cols}, c.residual, 3.0, seed);
  const Tensor delta = cudatest::randn({rows, cols}, c.delta, 0.2, seed + 1);
  const Tensor w = cudatest::randn({cols}, DType::kBF16, 0.3, seed + 2);
  Tensor x_cpu = Tensor::empty(x0.shape(), x0.dtype());
  copy(s.cpu, x0, x_cpu);
  Tensor out_cpu = Tensor::empty({rows, cols}, c.out);
  add_rms_norm(s.cpu, x_cpu, delta, w, 1e-6f, kind, out_cpu);

  Tensor x_gpu = s.up(x0), d_gpu = s.up(delta), w_gpu = s.up(w);
  Tensor out_gpu = cudatest::poisoned_gpu(s, {rows, cols}, c.out);
  add_rms_norm(s.gpu, x_gpu, d_gpu, w_gpu, 1e-6f, kind, out_gpu);
  expect_same_bytes(s, x_cpu, x_gpu, what + ": residual");
  // f32: both sum the squares in f32 in different orders. Narrow: kOnePlus rounds
  // once; kPlain rounds the normalised value and then the product (a chain).
  const bool narrow = c.out != DType::kF32;
  const double rel = !narrow ? 2e-5
                     : kind == RmsNormKind::kPlain
                         ? (c.out == DType::kF16 ? 2.0 / 1024 : cudatest::kBf16ChainRel)
                         : (c.out == DType::kF16 ? 1.0 / 1024 : cudatest::kBf16Rel);
  cudatest::expect_close(s, out_cpu, out_gpu, rel, narrow ? 0.0 : 1e-6, what + ": out");
}

TEST(CudaAddRmsNorm, MatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  const Case cases[] = {{DType::kBF16, DType::kBF16, DType::kBF16},
                        {DType::kF32, DType::kF32, DType::kF32},
                        {DType::kF16, DType::kF16, DType::kF16},
                        {DType::kBF16, DType::kF32, DType::kF32}};
  uint64_t seed = 100;
  for (const Case& c : cases)
    for (RmsNormKind kind : {RmsNormKind::kPlain, RmsNormKind::kOnePlus})
      for (int64_t rows : {1, 3, 64})
        for (int64_t cols : {4096, 2049, 5120}) {
          check_case(s, c, kind, rows, cols, seed);
          seed += 3;
        }
}

// Every launch shape of the kernel (cuda/norm/rms_norm_rows.cuh): the row held in one
// chunk per thread (32 threads for short rows, up to 1024 at 8192 columns) or two (up to
// 16384), or walked span by span past that; 16-byte accesses (cols % 8 == 0) or the
// scalar layout (any other cols, including a partial last span).
TEST(CudaAddRmsNorm, EveryBlockShapeMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  const Case cases[] = {{DType::kBF16, DType::kBF16, DType::kBF16},
                        {DType::kF32, DType::kF32, DType::kF32},
                        {DType::kBF16, DType::kF32, DType::kF32}};
  uint64_t seed = 300;
  for (const Case& c : cases)
    for (int64_t rows : {1, 5})
      for (int64_t cols : {8, 100, 128, 8192, 8200, 12288, 16384, 16392, 20001, 24576}) {
        check_case(s, c, RmsNormKind::kOnePlus, rows, cols, seed);
        seed += 3;
      }
  check_case(s, cases[0], RmsNormKind::kPlain, 2, 16392, seed);
}

// out may be delta itself: on a held row (4096) and on one walked span by span (24576),
// where pass 2 writes a span's out after pass 1 read every span's delta.
TEST(CudaAddRmsNorm, OutMayBeDelta) {
  VT_REQUIRE_GPU();
  Streams s;
  for (int64_t cols : {4096, 24576}) {
    const Tensor x0 = cudatest::randn({8, cols}, DType::kBF16, 3.0, 7);
    const Tensor d0 = cudatest::randn({8, cols}, DType::kBF16, 0.2, 8);
    const Tensor w = cudatest::randn({cols}, DType::kBF16, 0.3, 9);
    Tensor x_cpu = Tensor::empty(x0.shape(), x0.dtype()),
           d_cpu = Tensor::empty(d0.shape(), d0.dtype());
    copy(s.cpu, x0, x_cpu);
    copy(s.cpu, d0, d_cpu);
    add_rms_norm(s.cpu, x_cpu, d_cpu, w, 1e-6f, RmsNormKind::kOnePlus, d_cpu);
    Tensor x_gpu = s.up(x0), d_gpu = s.up(d0), w_gpu = s.up(w);
    add_rms_norm(s.gpu, x_gpu, d_gpu, w_gpu, 1e-6f, RmsNormKind::kOnePlus, d_gpu);
    const std::string what = "[8, " + std::to_string(cols) + "]";
    expect_same_bytes(s, x_cpu, x_gpu, what + " residual");
    cudatest::expect_close(s, d_cpu, d_gpu, cudatest::kBf16Rel, 0.0, what + " out in delta");
  }
}

// The fused op is one kernel where add then rms_norm are two: the kernel-node count of
// a captured graph (Stream::graph_kernel_nodes, the benchmark's kernels per step) says so,
// and the replay computes what the eager call does.
TEST(CudaAddRmsNorm, CapturedGraphHasOneKernelNodeAndReplays) {
  VT_REQUIRE_GPU();
  Streams s;
  const Tensor x0 = cudatest::randn({2, 4096}, DType::kBF16, 3.0, 21);
  const Tensor d0 = cudatest::randn({2, 4096}, DType::kBF16, 0.2, 22);
  const Tensor w = cudatest::randn({4096}, DType::kBF16, 0.3, 23);
  Tensor x_cpu = Tensor::empty(x0.shape(), x0.dtype()),
         out_cpu = Tensor::empty(x0.shape(), DType::kBF16);
  copy(s.cpu, x0, x_cpu);
  add_rms_norm(s.cpu, x_cpu, d0, w, 1e-6f, RmsNormKind::kOnePlus, out_cpu);

  Tensor x_gpu = s.up(x0), d_gpu = s.up(d0), w_gpu = s.up(w);
  Tensor out_gpu = cudatest::poisoned_gpu(s, x0.shape(), DType::kBF16);
  s.gpu.synchronize();
  s.gpu.begin_capture();
  add_rms_norm(s.gpu, x_gpu, d_gpu, w_gpu, 1e-6f, RmsNormKind::kOnePlus, out_gpu);
  cuda::GraphExecPtr fused = s.gpu.end_capture();
  EXPECT_EQ(Stream::graph_kernel_nodes(*fused), 1);
  s.gpu.replay(*fused);
  expect_same_bytes(s, x_cpu, x_gpu, "residual after replay");
  cudatest::expect_close(s, out_cpu, out_gpu, cudatest::kBf16Rel, 0.0, "out after replay");

  s.gpu.begin_capture();
  add(s.gpu, x_gpu, d_gpu, x_gpu);
  rms_norm(s.gpu, x_gpu, w_gpu, 1e-6f, RmsNormKind::kOnePlus, out_gpu);
  cuda::GraphExecPtr pair = s.gpu.end_capture();
  EXPECT_EQ(Stream::graph_kernel_nodes(*pair), 2);
  fused.reset();
  pair.reset();
  s.gpu.synchronize();
  cuda::release_graph_pool(0);
}

}  // namespace
}  // namespace vt
