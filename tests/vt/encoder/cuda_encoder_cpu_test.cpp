// The CUDA encoder ops against their CPU arms (vt/ops/encoder.h entry points, both
// backends, the same random inputs): the tower's shapes and layouts. The CPU arms
// compute in f32 and round once, as the CUDA row kernels do: bf16 outputs may land one
// ulp apart (cudatest::kBf16Rel), f32 outputs differ by summation order only, and
// weighted_gather, whose f32 operations the contract fixes, is equal byte for byte.
// segment_attention: the CPU arm keeps P in f32, the CUDA arm rounds it to bf16 before
// P V, so the outputs differ by out's rounding (half an ulp) plus at most 2^-8 of
// sum p |v| / l <= 2^-8 max |v| (the bound the test allows, 1% over for the rounding of
// that error itself). Skipped without a GPU.
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
#include "vt/ops/encoder.h"

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::i32;
using cudatest::kBf16Rel;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::Streams;

TEST(CudaEncoderCpu, LayerNormAndGeluMatchCpuArm) {
  VT_REQUIRE_GPU();
  Streams s;
  for (DType dt : {DType::kBF16, DType::kF32}) {
    const double rel = dt == DType::kF32 ? 1e-5 : kBf16Rel;
    const int64_t n = 300;
    Tensor x = randn({n, 1152}, dt, 1.5, 1), w = randn({1152}, dt, 1.0, 2),
           b = randn({1152}, dt, 0.5, 3);
    Tensor cpu_out = Tensor::empty({n, 1152}, dt);
    layer_norm(s.cpu, x, w, b, 1e-6f, cpu_out);
    Tensor gpu_out = poisoned_gpu(s, {n, 1152}, dt);
    layer_norm(s.gpu, s.up(x), s.up(w), s.up(b), 1e-6f, gpu_out);
    expect_close(s, cpu_out, gpu_out, rel, 1e-5, std::string("layer_norm ") + dtype_name(dt));

    for (auto [kind, cols] :
         {std::pair{GeluKind::kTanh, int64_t(4304)}, std::pair{GeluKind::kErf, int64_t(4608)}}) {
      Tensor h = randn({64, cols}, dt, 2.0, uint64_t(cols));
      Tensor cpu_g = Tensor::empty({64, cols}, dt);
      gelu(s.cpu, h, kind, cpu_g);
      Tensor gpu_g = poisoned_gpu(s, {64, cols}, dt);
      gelu(s.gpu, s.up(h), kind, gpu_g);
      // glibc's tanhf / erff and CUDA's differ by an ulp or two: 1e-6 of the rms covers
      // the cancellation in 1 + tanh(z) for negative x.
      expect_close(
          s, cpu_g, gpu_g, rel, 1e-6,
          std::string(kind == GeluKind::kTanh ? "gelu tanh " : "gelu erf ") + dtype_name(dt));
    }
  }
}

// add_layer_norm on CUDA: h byte for byte as the CPU's add (one f32 sum, one rounding), out
// as layer_norm's tolerance, and bit-equal to CUDA's own add then layer_norm. Rows of 1152
// (one span in registers) and of 20000 (re-read spans), one r in the scalar layout.
TEST(CudaEncoderCpu, AddLayerNormMatchesCpuAndTheComposition) {
  VT_REQUIRE_GPU();
  Streams s;
  uint64_t seed = 30;
  for (DType dt : {DType::kBF16, DType::kF32})
    for (int64_t d : {int64_t(1152), int64_t(20000), int64_t(1001)}) {
      const int64_t n = 70;
      const std::string what =
          std::string("add_layer_norm ") + dtype_name(dt) + " d " + std::to_string(d);
      const Tensor h0 = randn({n, d}, dt, 2.0, seed++), r = randn({n, d}, dt, 1.0, seed++);
      const Tensor w = randn({d}, dt, 1.0, seed++), b = randn({d}, dt, 0.5, seed++);
      Tensor h_cpu = Tensor::empty({n, d}, dt), out_cpu = Tensor::empty({n, d}, dt);
      copy(s.cpu, h0, h_cpu);
      add_layer_norm(s.cpu, h_cpu, r, w, b, 1e-6f, out_cpu);
      Tensor h_gpu = s.up(h0), out_gpu = poisoned_gpu(s, {n, d}, dt);
      const Tensor wg = s.up(w), bg = s.up(b), rg = s.up(r);
      add_layer_norm(s.gpu, h_gpu, rg, wg, bg, 1e-6f, out_gpu);
      const Tensor h_back = s.down(h_gpu);
      EXPECT_EQ(std::memcmp(h_back.data_ptr(), h_cpu.data_ptr(), h_cpu.nbytes()), 0) << what;
      expect_close(s, out_cpu, out_gpu, dt == DType::kF32 ? 1e-5 : kBf16Rel, 1e-5, what);

      Tensor h_two = s.up(h0), out_two = poisoned_gpu(s, {n, d}, dt);
      add(s.gpu, h_two, rg, h_two);
      layer_norm(s.gpu, h_two, wg, bg, 1e-6f, out_two);
      const Tensor a = s.down(out_gpu), c = s.down(out_two);
      EXPECT_EQ(std::memcmp(a.data_ptr(), c.data_ptr(), a.nbytes()), 0) << what;
    }
}

TEST(CudaEncoderCpu, WeightedGatherEqualsCpuArmByteForByte) {
  VT_REQUIRE_GPU();
  Streams s;
  // The tower's bilinear position lookup: a 48 x 48 grid table, 4 taps, fp32 weights.
  const int64_t n = 1000, taps = 4;
  Tensor table = randn({2304, 1152}, DType::kBF16, 1.0, 4);
  Tensor wt = cudatest::uniform({n, taps}, 0.0f, 1.0f, 5);
  std::vector<int32_t> ids(size_t(n * taps));
  std::mt19937 rng(6);
  for (int32_t& i : ids) i = int32_t(rng() % 2304);
  Tensor idx = i32(ids).view({n, taps});
  for (DType out_dt : {DType::kBF16, DType::kF32}) {
    Tensor cpu_out = Tensor::empty({n, 1152}, out_dt);
    weighted_gather(s.cpu, table, idx, wt, cpu_out);
    Tensor gpu_out = poisoned_gpu(s, {n, 1152}, out_dt);
    weighted_gather(s.gpu, s.up(table), s.up(idx), s.up(wt), gpu_out);
    Tensor back = s.down(gpu_out);
    EXPECT_EQ(std::memcmp(back.data_ptr(), cpu_out.data_ptr(), cpu_out.nbytes()), 0)
        << dtype_name(out_dt);
  }
}

TEST(CudaEncoderCpu, SegmentAttentionMatchesCpuArm) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t H = 4, D = 72, W = 3 * H * D;
  const std::vector<int32_t> cu{0, 1, 8, 8, 72, 201, 1201};
  const int64_t N = cu.back();
  Tensor qkv = randn({N, W}, DType::kBF16, 1.0, 7);
  auto part = [&](const Tensor& t, int i) {
    return t.slice(1, i * H * D, (i + 1) * H * D).reshape({N, H, D});
  };
  const float scale = 1.0f / std::sqrt(float(D));
  Tensor cpu_out = Tensor::empty({N, H, D}, DType::kF32);
  segment_attention(s.cpu, part(qkv, 0), part(qkv, 1), part(qkv, 2), i32(cu), scale, cpu_out);
  Tensor qkv_g = s.up(qkv);
  Tensor gpu_out = poisoned_gpu(s, {N, H, D}, DType::kBF16);
  segment_attention(s.gpu, part(qkv_g, 0), part(qkv_g, 1), part(qkv_g, 2), i32(cu), scale, gpu_out);
  Tensor vf = to_dtype(s.cpu, contiguous(s.cpu, part(qkv, 2)), DType::kF32);
  double vmax = 0, ss = 0;
  for (int64_t i = 0; i < vf.numel(); ++i)
    vmax = std::max(vmax, double(std::fabs(vf.data<float>()[i])));
  for (int64_t i = 0; i < cpu_out.numel(); ++i)
    ss += double(cpu_out.data<float>()[i]) * cpu_out.data<float>()[i];
  const double rms = std::sqrt(ss / double(cpu_out.numel()));
  expect_close(s, cpu_out, gpu_out, 1.01 / 256, 1.01 / 256 * vmax / rms + 1e-5,
               "segment_attention bf16 vs the f32 CPU arm");
}

}  // namespace
}  // namespace vt
