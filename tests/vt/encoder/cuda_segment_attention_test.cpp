// The CUDA segment_attention arm (vt/cuda/encoder.h; kernels in vt/cuda/encoder/)
// against a double-precision reference computed here, on random inputs: segments of
// lengths 1 to 4096 (an empty one too), the wgmma kernel and the mma.sync kernel at the
// head dims both take, every padded head dim of the mma.sync kernel and odd head dims
// (the scalar copy and store paths), q/k/v as per-head views of a fused
// [N, 3 * heads * head_dim] qkv, out a view into a wider buffer whose other columns must
// stay untouched, and the CUDA-core kernel (f32, head_dim past 128); the kernel tests
// also check that the dispatch (cuda::segment_attention_kernel) chose that kernel.
// Each segment's v is shifted by its own offset, so a key read across a segment
// boundary moves the output far past the tolerance. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "vt/ops/copy.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/encoder.h"
#include "vt/cuda/stream_state.h"
#endif

namespace vt {
namespace {

#if VTLLM_WITH_CUDA

using cudatest::randn;
using cudatest::Streams;
constexpr cuda::SegmentAttentionKernel kWgmma = cuda::SegmentAttentionKernel::kWgmma;
constexpr cuda::SegmentAttentionKernel kMmaSync = cuda::SegmentAttentionKernel::kMmaSync;
constexpr cuda::SegmentAttentionKernel kCudaCores = cuda::SegmentAttentionKernel::kCudaCores;

cuda::HeadsArg heads_arg(const Tensor& t) {
  return {t.data_ptr(), t.dtype(), t.stride(0), t.stride(1)};
}

// f32 values of a [N, heads, head_dim] CPU view, dense.
std::vector<float> values(Stream& cpu, const Tensor& t) {
  Tensor f = to_dtype(cpu, contiguous(cpu, t), DType::kF32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

struct Case {
  DType dtype;
  int64_t heads, head_dim;
  std::vector<int32_t> lens;  // segment lengths, in order (0: an empty segment)
  int check_every = 1;        // reference rows: every check_every-th token
  uint64_t seed = 1;
  KernelConfig config = {};  // the stream's switches (segattn_wgmma)
  // The kernel the dispatch must choose (a wgmma expectation needs an sm_90 device).
  std::optional<cuda::SegmentAttentionKernel> kernel = std::nullopt;
};

// Per-element bound on |cuda - exact|: the output's own rounding (half an ulp, `eps`
// relative) plus P's rounding to the input dtype before P V, each p off by at most eps
// relative: |sum (p~ - p) v| / l <= eps sum p |v| / l, and for long segments the
// errors' random signs keep it near eps sqrt(sum p^2 v^2) / l (6 of those allowed; 1%
// over for out's rounding of that error), plus f32 accumulation noise.
double allowance(double ref, double eps, double sum_pv_abs, double sqrt_p2v2, double l,
                 double vmax) {
  return eps * std::fabs(ref) + 1.01 * eps * std::min(sum_pv_abs, 6 * sqrt_p2v2) / l + 2e-6 * vmax;
}

void run_case(const Case& c, const std::string& what) {
  Streams s;
  s.gpu.set_kernel_config(c.config);
  const int64_t H = c.heads, D = c.head_dim, W = 3 * H * D;
  std::vector<int32_t> cu{0};
  for (int32_t len : c.lens) cu.push_back(cu.back() + len);
  const int64_t N = cu.back();

  // Fused qkv in f32, each segment's v columns offset by +-0.4 (i + 1), then rounded.
  Tensor f = randn({N, W}, DType::kF32, 1.0, c.seed);
  for (size_t i = 0; i + 1 < cu.size(); ++i) {
    const float off = (i % 2 ? -0.4f : 0.4f) * float(i + 1);
    for (int32_t n = cu[i]; n < cu[i + 1]; ++n)
      for (int64_t j = 2 * H * D; j < W; ++j) f.data<float>()[n * W + j] += off;
  }
  Tensor qkv = to_dtype(s.cpu, f, c.dtype);
  auto part = [&](const Tensor& t, int i) {
    return t.slice(1, i * H * D, (i + 1) * H * D).reshape({N, H, D});
  };
  const std::vector<float> q = values(s.cpu, part(qkv, 0)), k = values(s.cpu, part(qkv, 1)),
                           v = values(s.cpu, part(qkv, 2));

  // out: a [N, H, D] view of columns [8, 8 + H D) of a [N, H D + 16] buffer of -7.
  const int64_t OW = H * D + 16;
  Tensor wide_host = Tensor::empty({N, OW}, c.dtype);
  {
    Tensor sev = Tensor::empty({N, OW}, DType::kF32);
    std::fill(sev.data<float>(), sev.data<float>() + sev.numel(), -7.0f);
    wide_host = to_dtype(s.cpu, sev, c.dtype);
  }
  Tensor qkv_g = s.up(qkv), wide_g = s.up(wide_host);
  Tensor out_g = wide_g.slice(1, 8, 8 + H * D).reshape({N, H, D});
  const float scale = float(1.0 / std::sqrt(double(D)));
  if (c.kernel) {
    ASSERT_TRUE(*c.kernel != cuda::SegmentAttentionKernel::kWgmma || s.gpu.cuda_state().cc == 90)
        << what << ": the wgmma kernel needs an sm_90 device";
    EXPECT_EQ(
        cuda::segment_attention_kernel(s.gpu, heads_arg(part(qkv_g, 0)), heads_arg(part(qkv_g, 1)),
                                       heads_arg(part(qkv_g, 2)), D),
        *c.kernel)
        << what << ": the dispatch chose another kernel";
  }
  cuda::segment_attention(s.gpu, heads_arg(part(qkv_g, 0)), heads_arg(part(qkv_g, 1)),
                          heads_arg(part(qkv_g, 2)), N, H, D, cu, scale, heads_arg(out_g));
  const std::vector<float> wide = values(s.cpu, s.down(wide_g));

  const double eps = c.dtype == DType::kBF16  ? 1.0 / 256
                     : c.dtype == DType::kF16 ? 1.0 / 2048
                                              : 1e-6;
  double vmax = 0;
  for (float x : v) vmax = std::max(vmax, double(std::fabs(x)));
  double worst = 0;
  int64_t bad = 0, checked = 0;
  std::string worst_at;
  std::vector<double> p;
  for (size_t seg = 0; seg + 1 < cu.size(); ++seg) {
    const int32_t b = cu[seg], e = cu[seg + 1];
    p.resize(size_t(e - b));
    for (int32_t n = b; n < e; ++n) {
      // Columns outside out's view keep their -7.
      for (int64_t j = 0; j < OW; ++j) {
        if (j < 8 || j >= 8 + H * D) {
          ASSERT_EQ(wide[size_t(n * OW + j)], -7.0f) << what << " col " << j;
        }
      }
      if ((n - b) % c.check_every != 0 && n != e - 1) continue;
      for (int64_t h = 0; h < H; ++h) {
        const float* qr = &q[size_t((n * H + h) * D)];
        double mx = -INFINITY;
        for (int32_t t = b; t < e; ++t) {
          const float* kr = &k[size_t((t * H + h) * D)];
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += double(qr[d]) * kr[d];
          p[size_t(t - b)] = dot * scale;
          mx = std::max(mx, p[size_t(t - b)]);
        }
        double l = 0;
        for (double& x : p) l += (x = std::exp(x - mx));
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0, abs_pv = 0, p2v2 = 0;
          for (int32_t t = b; t < e; ++t) {
            const double pv = p[size_t(t - b)] * v[size_t((t * H + h) * D + d)];
            acc += pv, abs_pv += std::fabs(pv), p2v2 += pv * pv;
          }
          const double ref = acc / l;
          const double got = wide[size_t(n * OW + 8 + h * D + d)];
          const double r =
              std::isfinite(got)
                  ? std::fabs(got - ref) / allowance(ref, eps, abs_pv, std::sqrt(p2v2), l, vmax)
                  : INFINITY;
          ++checked;
          if (r > 1) ++bad;
          if (r > worst) {
            worst = r;
            worst_at = "token " + std::to_string(n) + " head " + std::to_string(h) + " dim " +
                       std::to_string(d) + ": ref " + std::to_string(ref) + " cuda " +
                       std::to_string(got);
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0) << what;
  EXPECT_LE(worst, 1.0) << what << ": " << bad << " of " << checked
                        << " out of tolerance; worst at " << worst_at;
}

TEST(CudaSegmentAttention, FusedQkvViewsBf16MatchDoubleReference) {
  VT_REQUIRE_GPU();
  // The real tower's head dim (72, padded to 80 inside the kernel), segments of every
  // kind of length: one token, shorter than a key tile, one tile, a tile and one, many.
  run_case({DType::kBF16, 3, 72, {1, 7, 0, 64, 129, 1000}}, "bf16 d72");
}

TEST(CudaSegmentAttention, F16MatchesDoubleReference) {
  VT_REQUIRE_GPU();
  run_case({DType::kF16, 2, 64, {129, 1, 1000, 7, 64}, 1, 2}, "f16 d64");
}

TEST(CudaSegmentAttention, EveryPaddedHeadDimMatchesDoubleReference) {
  VT_REQUIRE_GPU();
  // Multiples of 8 take 16-byte copies, the others the scalar copy and stores.
  for (int64_t d : {16, 32, 48, 64, 80, 128, 8, 17, 33, 40, 72, 100, 127}) {
    SCOPED_TRACE(d);
    run_case({DType::kBF16, 2, d, {129, 7, 64, 200}, 1, uint64_t(d)}, "bf16 d" + std::to_string(d));
  }
  run_case({DType::kF16, 2, 33, {129, 7, 300}, 1, 5}, "f16 d33");
}

TEST(CudaSegmentAttention, MmaSyncKernelMatchesDoubleReferenceWhereWgmmaApplies) {
  VT_REQUIRE_GPU();
  // The head dims the wgmma kernel takes by default, through the mma.sync kernel.
  KernelConfig off;
  off.segattn_wgmma = Toggle::kOff;
  for (int64_t d : {64, 72, 80}) {
    SCOPED_TRACE(d);
    run_case({DType::kBF16, 3, d, {1, 7, 0, 64, 129, 1000}, 1, uint64_t(d), off, kMmaSync},
             "mma.sync bf16 d" + std::to_string(d));
  }
  run_case({DType::kF16, 2, 72, {129, 1, 300}, 1, 3, off, kMmaSync}, "mma.sync f16 d72");
}

TEST(CudaSegmentAttention, WgmmaKernelMatchesDoubleReference) {
  VT_REQUIRE_GPU();
  // Query tiles of 256 rows: segments shorter than one (1, 7, 100, 129), one exactly
  // (256), one and one row (257), several with a partial key tile (1000), both dtypes.
  for (int64_t d : {64, 72, 80}) {
    SCOPED_TRACE(d);
    run_case({DType::kBF16,
              5,
              d,
              {128, 1, 100, 257, 129, 7, 1000, 256},
              1,
              uint64_t(d) + 40,
              {},
              kWgmma},
             "wgmma bf16 d" + std::to_string(d));
    run_case({DType::kF16, 2, d, {129, 1, 1000, 64}, 1, uint64_t(d) + 80, {}, kWgmma},
             "wgmma f16 d" + std::to_string(d));
  }
}

TEST(CudaSegmentAttention, RealSegmentLengthMatchesDoubleReference) {
  VT_REQUIRE_GPU();
  // One 1024 x 1024 image: a 4096-token segment; then a video-like run of 4 equal slabs.
  run_case({DType::kBF16, 2, 72, {4096}, 61, 7}, "bf16 4096");
  run_case({DType::kBF16, 2, 72, {1024, 1024, 1024, 1024}, 31, 8}, "bf16 4 x 1024");
}

TEST(CudaSegmentAttention, CudaCoreKernelMatchesDoubleReference) {
  VT_REQUIRE_GPU();
  // f32 inputs, and bf16 past the tensor-core kernel's head dims (P rounded to bf16).
  run_case({DType::kF32, 3, 72, {1, 7, 64, 129, 1000}, 3, 9, {}, kCudaCores}, "f32 d72");
  run_case({DType::kF32, 2, 201, {17, 300}, 1, 10, {}, kCudaCores}, "f32 d201");
  run_case({DType::kBF16, 2, 160, {1, 7, 64, 129, 300}, 1, 11, {}, kCudaCores}, "bf16 d160");
}

TEST(CudaSegmentAttention, RefusesHeadDimPastTheCudaCoreLimit) {
  VT_REQUIRE_GPU();
  Streams s;
  Tensor x = s.up(randn({4, 1, 264}, DType::kF32, 1.0, 3));
  EXPECT_THROW(cuda::segment_attention(s.gpu, heads_arg(x), heads_arg(x), heads_arg(x), 4, 1, 264,
                                       {0, 4}, 0.1f, heads_arg(x)),
               vtllm::Error);
}

#endif  // VTLLM_WITH_CUDA

}  // namespace
}  // namespace vt
