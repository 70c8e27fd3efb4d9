// CUDA linear (vt/cuda/gemm.h): the skinny decode kernel, the dispatch and the cuBLASLt
// fallback against a double-precision reference at the projection shapes of Qwen3.5
// (hidden 4096) and Qwen3.6-27B (hidden 5120), odd shapes (N not a multiple of the
// 32-row tile, K not a multiple of the 32-wide step, tiny N), strided operands, bias,
// f16 and f32 outputs. Outputs are NaN-poisoned first; every element is checked for
// NaN, a sample of columns (all of them up to N = 4096) against the reference.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "vt/ops/copy.h"
#include "vt/ops/gemm.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/api.h"
#include "vt/cuda/gemm.h"
#endif

namespace vt {
namespace {

#if VTLLM_WITH_CUDA

using cudatest::poisoned_gpu;
using cudatest::Streams;

// Uniform in [-scale, scale) from a counter hash (fast enough for 600M weights), in dtype.
Tensor host_rand(const Shape& shape, DType dtype, double scale, uint64_t seed) {
  Tensor t = Tensor::empty(shape, dtype);
  auto value = [&](int64_t i) {
    uint64_t z = (seed << 40) + uint64_t(i) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return float(scale * (double(z >> 11) * 0x1.0p-52 - 1.0));
  };
  const int64_t n = t.numel();
  if (dtype == DType::kBF16) {
    for (int64_t i = 0; i < n; ++i) t.data<BF16>()[i] = from_f32<BF16>(value(i));
  } else if (dtype == DType::kF16) {
    for (int64_t i = 0; i < n; ++i) t.data<F16>()[i] = from_f32<F16>(value(i));
  } else {
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = value(i);
  }
  return t;
}

double at(const Tensor& t, int64_t i) {  // element i of a contiguous host tensor
  switch (t.dtype()) {
    case DType::kBF16:
      return to_f32(t.data<BF16>()[i]);
    case DType::kF16:
      return to_f32(t.data<F16>()[i]);
    default:
      return t.data<float>()[i];
  }
}

// One unit in the last place of out's dtype at magnitude |v|.
double ulp(DType dt, double v) {
  const int mant = dt == DType::kBF16 ? 7 : dt == DType::kF16 ? 10 : 23;
  const int min_exp = dt == DType::kF16 ? -14 : -126;
  const int e = v == 0 ? min_exp : std::max(min_exp, std::ilogb(v));
  return std::ldexp(1.0, e - mant);
}

struct Case {
  int64_t m, k, n;
  DType in = DType::kBF16, out = DType::kBF16;
  bool bias = false;
  int64_t x_pad = 0, w_pad = 0;  // extra columns: row strides K + pad
  int64_t x_offset = 0;          // x starts this many elements into its row (alignment)
};

std::string name(const Case& c) {
  return "M=" + std::to_string(c.m) + " K=" + std::to_string(c.k) + " N=" + std::to_string(c.n) +
         " " + dtype_name(c.in) + "->" + dtype_name(c.out) + (c.bias ? " +bias" : "") +
         (c.x_pad ? " ldx+" + std::to_string(c.x_pad) : "") +
         (c.w_pad ? " ldw+" + std::to_string(c.w_pad) : "") +
         (c.x_offset ? " x+" + std::to_string(c.x_offset) : "");
}

// Host operands, their device copies (views with the case's strides) and the reference.
struct Problem {
  Case c;
  Tensor x, w, bias;     // host, contiguous (x and w padded)
  Tensor xg, wg, biasg;  // device views
  Problem(Streams& s, const Case& cs, uint64_t seed) : c(cs) {
    x = host_rand({c.m, c.x_offset + c.k + c.x_pad}, c.in, 1.0, seed);
    w = host_rand({c.n, c.k + c.w_pad}, c.in, 1.0 / std::sqrt(double(c.k)), seed + 1);
    xg = s.up(x).slice(1, c.x_offset, c.x_offset + c.k);
    wg = s.up(w).slice(1, 0, c.k);
    if (c.bias) {
      bias = host_rand({c.n}, c.in, 0.5, seed + 2);
      biasg = s.up(bias);
    }
  }
  // Checks every element of `got` (device, [M, N]) for NaN and the sampled columns
  // against sum_k x w (+ bias) in double. Allowance: one ulp of out's dtype at the
  // reference (the final rounding, moved by f32 error) plus the f32 accumulation bound
  // 2 (K / 32 + 32) 2^-24 sum_k |x w|: the longest chain of f32 additions in the kernel
  // is a warp's sequential mma steps plus the fixed warp and cluster sums, with a factor
  // 2 for the tensor cores' internal alignment.
  void check(Streams& s, const Tensor& got, const std::string& what) const {
    Tensor h = s.down(got);
    ASSERT_EQ(h.numel(), c.m * c.n) << what;
    int64_t nans = 0;
    for (int64_t i = 0; i < h.numel(); ++i) nans += std::isnan(at(h, i)) ? 1 : 0;
    EXPECT_EQ(nans, 0) << what << ": NaN (unwritten) outputs";
    std::vector<int64_t> cols;
    if (c.n <= 4096) {
      for (int64_t n = 0; n < c.n; ++n) cols.push_back(n);
    } else {
      for (int64_t n = 0; n < 48; ++n) cols.push_back(n);
      for (int64_t n = c.n - 48; n < c.n; ++n) cols.push_back(n);
      for (int64_t i = 0; i < 1024; ++i) cols.push_back(48 + (i * 7919 + 13) % (c.n - 96));
    }
    const int64_t ldx = x.size(1), ldw = w.size(1);
    std::vector<double> xr(size_t(c.m * c.k)), wr(size_t(c.k));
    for (int64_t m = 0; m < c.m; ++m)
      for (int64_t k = 0; k < c.k; ++k) xr[size_t(m * c.k + k)] = at(x, m * ldx + c.x_offset + k);
    double worst = 0;
    int64_t bad = 0;
    std::string worst_at;
    for (int64_t n : cols) {
      for (int64_t k = 0; k < c.k; ++k) wr[size_t(k)] = at(w, n * ldw + k);
      for (int64_t m = 0; m < c.m; ++m) {
        double sum = 0, mag = 0;
        for (int64_t k = 0; k < c.k; ++k) {
          const double p = xr[size_t(m * c.k + k)] * wr[size_t(k)];
          sum += p;
          mag += std::fabs(p);
        }
        if (c.bias) sum += at(bias, n), mag += std::fabs(at(bias, n));
        const double g = at(h, m * c.n + n);
        const double allow =
            ulp(c.out, std::fabs(sum)) + 2.0 * double(c.k / 32 + 32) * 0x1.0p-24 * mag;
        const double r = std::fabs(g - sum) / allow;
        if (!(r <= 1)) ++bad;
        if (!(r <= worst)) {
          worst = r;
          worst_at = "[" + std::to_string(m) + ", " + std::to_string(n) + "]: got " +
                     std::to_string(g) + " want " + std::to_string(sum);
        }
      }
    }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " outputs out of tolerance; worst (x" << worst
                      << " the allowance) at " << worst_at;
  }
};

Tensor run_linear(Streams& s, const Problem& p, bool skinny,
                  cuda::SkinnyPdl pdl = cuda::SkinnyPdl::kDefault) {
  Tensor out = poisoned_gpu(s, {p.c.m, p.c.n}, p.c.out);
  if (skinny) {
    cuda::linear_skinny(s.gpu, p.xg, p.wg, p.biasg, out, 0, pdl);
  } else {
    linear(s.gpu, p.xg, p.wg, out, p.biasg);
  }
  return out;
}

bool bytes_equal(Streams& s, const Tensor& a, const Tensor& b) {
  Tensor ha = s.down(a), hb = s.down(b);
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.data_ptr(), hb.data_ptr(), ha.nbytes()) == 0;
}

// Every case through linear() (the dispatch) and, where it applies, linear_skinny();
// both must pass the reference, repeat bit for bit, and agree bit for bit when the
// dispatch picks the skinny kernel. The skinny kernel's launches with and without PDL
// (SkinnyPdl) give the same bytes.
void run_cases(const std::vector<Case>& cases, uint64_t seed) {
  Streams s;
  for (const Case& c : cases) {
    const Problem p(s, c, seed);
    seed += 3;
    const std::string what = name(c);
    const bool applies = cuda::skinny_supports(p.xg, p.wg, Tensor());
    Tensor via_op = run_linear(s, p, false);
    p.check(s, via_op, what + " via linear");
    if (!applies) continue;
    Tensor skinny = run_linear(s, p, true);
    p.check(s, skinny, what + " skinny");
    EXPECT_TRUE(bytes_equal(s, skinny, run_linear(s, p, true))) << what << ": not reproducible";
    for (cuda::SkinnyPdl pdl :
         {cuda::SkinnyPdl::kOff, cuda::SkinnyPdl::kRing, cuda::SkinnyPdl::kRingL2}) {
      EXPECT_TRUE(bytes_equal(s, skinny, run_linear(s, p, true, pdl)))
          << what << ": SkinnyPdl " << int(pdl) << " changed the result";
    }
    if (cuda::use_skinny(s.gpu.kernel_config(), p.xg, p.wg, via_op)) {
      EXPECT_TRUE(bytes_equal(s, skinny, via_op))
          << what << ": linear did not take the skinny path";
    }
  }
}

// Every M of the brief at two shapes: the 4096-hidden k/v projection (N = 1024: split K
// over an 8-CTA cluster) and the 27B q projection (384 row tiles, no split).
TEST(CudaGemmSkinny, MatchesDoubleReferenceForEveryDecodeM) {
  VT_REQUIRE_GPU();
  std::vector<Case> cases;
  for (int64_t m : {1, 2, 3, 4, 8, 16}) {
    cases.push_back({m, 4096, 1024});
    cases.push_back({m, 5120, 12288});
  }
  run_cases(cases, 100);
}

TEST(CudaGemmSkinny, MatchesDoubleReferenceAtModelShapes) {
  VT_REQUIRE_GPU();
  run_cases(
      {
          {1, 12288, 4096},  // MLP down, hidden 4096
          {16, 12288, 4096},
          {1, 17408, 5120},  // MLP down, 27B
          {3, 17408, 5120},
          {16, 17408, 5120},
          {1, 4096, 24576},  // gate+up, hidden 4096
          {4, 4096, 24576},
          {2, 4096, 8192},  // q_proj (query + gate), hidden 4096
          {16, 4096, 8192},
          {8, 6144, 5120},    // o_proj / GDN out_proj, 27B
          {1, 4096, 151936},  // a 152K vocabulary lm_head
          {8, 4096, 151936},
      },
      200);
}

TEST(CudaGemmSkinny, OddShapesStridesBiasAndDtypes) {
  VT_REQUIRE_GPU();
  Case f16{9, 5120, 1000, DType::kF16, DType::kF16};
  Case f16_f32_bias{3, 4096, 333, DType::kF16, DType::kF32, true};
  Case bias_out_f32{4, 4096, 1024, DType::kBF16, DType::kF32, true};
  Case strided{5, 4096, 4096};
  strided.x_pad = 64;
  strided.w_pad = 8;
  Case one_row_odd_stride{1, 4096, 2048};
  one_row_odd_stride.x_pad = 3;  // a single row: its stride is never used
  run_cases(
      {
          {1, 4096, 32},  // GDN in_proj_b / in_proj_a, hidden 4096
          {16, 4096, 32},
          {5, 5120, 48},    // the same at 27B
          {1, 4104, 1000},  // K % 32 != 0, N % 32 != 0
          {7, 4104, 1000},
          {13, 4104, 1000},
          {3, 72, 17},
          {1, 8, 1},
          {2, 40, 3},
          {24, 4096, 4096},  // 17..32 rows: the four-tile instantiation (skinny only)
          {32, 4096, 1000},
          f16,
          f16_f32_bias,
          bias_out_f32,
          strided,
          one_row_odd_stride,
      },
      300);
}

// The cluster split forced to each size (the rule picks one per shape): same reference.
TEST(CudaGemmSkinny, EveryClusterSplitMatchesTheReference) {
  VT_REQUIRE_GPU();
  Streams s;
  for (const Case& c : {Case{5, 4104, 1000}, Case{16, 17408, 96}, Case{1, 64, 40}}) {
    const Problem p(s, c, 500);
    for (int split : {1, 2, 4, 8}) {
      Tensor out = poisoned_gpu(s, {c.m, c.n}, c.out);
      cuda::linear_skinny(s.gpu, p.xg, p.wg, p.biasg, out, split);
      p.check(s, out, name(c) + " split " + std::to_string(split));
    }
  }
}

// Shapes the skinny kernel refuses go to cuBLASLt through linear() and stay correct.
TEST(CudaGemmSkinny, FallsBackToCublasLtOutsideItsContract) {
  VT_REQUIRE_GPU();
  Case odd_k{2, 4100, 1000};       // K not a multiple of 8
  Case misaligned{3, 4096, 1024};  // x 2 bytes off a 16-byte boundary
  misaligned.x_offset = 1;
  misaligned.x_pad = 7;
  Case odd_ldx{2, 4096, 1024};  // x row stride not a multiple of 8 elements
  odd_ldx.x_pad = 3;
  Case f32{2, 1024, 512, DType::kF32, DType::kF32};
  Case wide{64, 4096, 1024};  // M above the skinny limit
  Streams s;
  for (const Case* c : {&odd_k, &misaligned, &odd_ldx, &f32, &wide}) {
    const Problem p(s, *c, 400);
    EXPECT_FALSE(cuda::skinny_supports(p.xg, p.wg, Tensor())) << name(*c);
  }
  run_cases({odd_k, misaligned, odd_ldx, f32, wide}, 400);
  {  // f32 activations with bf16 weights: both widened to f32 (vs the CPU op)
    Tensor x = host_rand({1, 4096}, DType::kF32, 1.0, 7),
           w = host_rand({1024, 4096}, DType::kBF16, 1.0 / 64, 8);
    Tensor xg = s.up(x), wg = s.up(w);
    EXPECT_FALSE(cuda::skinny_supports(xg, wg, Tensor()));
    Tensor want = Tensor::empty({1, 1024}, DType::kBF16),
           got = poisoned_gpu(s, {1, 1024}, DType::kBF16);
    linear(s.cpu, x, w, want);
    linear(s.gpu, xg, wg, got);
    cudatest::expect_close(s, want, got, cudatest::kBf16Rel, 2e-5, "f32 x bf16 w (cuBLASLt)");
  }
}

// A graph captured around the skinny kernel (an 8-CTA cluster split and a plain launch)
// replays to the bytes of eager runs for new activations in the same buffer.
TEST(CudaGemmSkinny, GraphReplayEqualsEager) {
  VT_REQUIRE_GPU();
  Streams s;
  Tensor x = s.up(host_rand({4, 4096}, DType::kBF16, 1.0, 9));
  Tensor w1 = s.up(host_rand({1024, 4096}, DType::kBF16, 1.0 / 64, 10));
  Tensor w2 = s.up(host_rand({12288, 4096}, DType::kBF16, 1.0 / 64, 11));
  auto step = [&](Tensor& a, Tensor& b) {
    linear(s.gpu, x, w1, a);
    linear(s.gpu, x, w2, b);
  };
  Tensor ga = Tensor::empty({4, 1024}, DType::kBF16, s.gpu.device());
  Tensor gb = Tensor::empty({4, 12288}, DType::kBF16, s.gpu.device());
  step(ga, gb);  // warm-up outside the capture
  s.gpu.synchronize();
  s.gpu.begin_capture();
  step(ga, gb);
  cuda::GraphExecPtr g = s.gpu.end_capture();
  for (uint64_t seed : {20u, 30u}) {
    copy(s.gpu, s.up(host_rand({4, 4096}, DType::kBF16, 1.0, seed)), x);
    Tensor ea = Tensor::empty({4, 1024}, DType::kBF16, s.gpu.device());
    Tensor eb = Tensor::empty({4, 12288}, DType::kBF16, s.gpu.device());
    step(ea, eb);
    s.gpu.replay(*g);
    EXPECT_TRUE(bytes_equal(s, ea, ga)) << seed;
    EXPECT_TRUE(bytes_equal(s, eb, gb)) << seed;
  }
  g.reset();
  s.gpu.synchronize();
  cuda::release_graph_pool(0);
}

// The dispatch rule of vt/cuda/gemm.h: auto (the default) = skinny for supported
// shapes with M <= kSkinnyMaxM and N >= kSkinnyMinN (vocabulary heads);
// KernelConfig::gemm_skinny kOff / kOn (VTLLM_GEMM_SKINNY=0 / 1) = never / wherever supported.
TEST(CudaGemmSkinny, DispatchFollowsTheRule) {
  VT_REQUIRE_GPU();
  EXPECT_TRUE(cuda::skinny_rule(1, 151936, 4096));
  EXPECT_TRUE(cuda::skinny_rule(cuda::kSkinnyMaxM, 248320, 5120));
  EXPECT_FALSE(cuda::skinny_rule(cuda::kSkinnyMaxM + 1, 151936, 4096));
  EXPECT_FALSE(cuda::skinny_rule(1, 4096, 4096));
  EXPECT_FALSE(cuda::skinny_rule(1, cuda::kSkinnyMinN - 1, 4096));
  Streams s;
  const int64_t n = cuda::kSkinnyMinN;  // the smallest N the rule takes
  Tensor w = s.up(host_rand({n, 256}, DType::kBF16, 1.0 / 16, 1));
  for (int64_t m : {int64_t(1), cuda::kSkinnyMaxM, cuda::kSkinnyMaxM + 1, cuda::kSkinnyLimitM,
                    int64_t(64)}) {
    Tensor x = s.up(host_rand({m, 256}, DType::kBF16, 1.0, 2));
    Tensor out = Tensor::empty({m, n}, DType::kBF16, s.gpu.device());
    const bool supports = cuda::skinny_supports(x, w, out);
    EXPECT_EQ(supports, m <= cuda::kSkinnyLimitM) << m;
    for (Toggle mode : {Toggle::kAuto, Toggle::kOn, Toggle::kOff}) {
      KernelConfig k;
      k.gemm_skinny = mode;
      const bool want = mode == Toggle::kOn     ? supports
                        : mode == Toggle::kAuto ? supports && m <= cuda::kSkinnyMaxM
                                                : false;
      EXPECT_EQ(cuda::use_skinny(k, x, w, out), want) << "M=" << m << " " << k.str();
    }
  }
}

// PDL: the skinny kernel starts streaming its weights before the previous kernel on the
// stream has finished, and must read x only after griddepcontrol.wait. Each case runs
// a slow kernel that writes x (old contents: different random values), then the skinny
// kernel with PDL, with no synchronisation between; the result must equal the CPU
// linear of x's final contents. The producers: the skinny kernel itself with PDL (it
// triggers its dependents early, so the consumer really is launched while x is being
// computed), cuBLASLt, and a dtype-converting copy kernel whose last rows are x.
TEST(CudaGemmSkinny, PdlReadsTheActivationsThePreviousKernelWrote) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Shape {
    int64_t m, k, n;
  };
  const int64_t kp = 8192;  // the producer's K: its weights take tens of microseconds
  uint64_t seed = 700;
  for (const Shape sh : {Shape{1, 4096, 12352}, Shape{8, 4096, 4096}, Shape{16, 12288, 4096},
                         Shape{4, 4096, 10240}, Shape{1, 4096, 24576}}) {
    const Tensor w_host = host_rand({sh.n, sh.k}, DType::kBF16, 1.0 / std::sqrt(double(sh.k)), seed);
    const Tensor w = s.up(w_host);
    const Tensor a = s.up(host_rand({sh.m, kp}, DType::kBF16, 1.0, seed + 1));
    const Tensor b = s.up(host_rand({sh.k, kp}, DType::kBF16, 1.0 / std::sqrt(double(kp)), seed + 2));
    const Tensor old_x = s.up(host_rand({sh.m, sh.k}, DType::kBF16, 1.0, seed + 3));
    // The copy producer: 32M f32 values converted to bf16, x its last M rows.
    const int64_t rows = (int64_t(1) << 25) / sh.k;
    const Tensor big_src = s.up(host_rand({rows, sh.k}, DType::kF32, 1.0, seed + 4));
    Tensor big = Tensor::empty({rows, sh.k}, DType::kBF16, s.gpu.device());
    seed += 10;
    for (int producer = 0; producer < 3; ++producer) {
      for (cuda::SkinnyPdl pdl : {cuda::SkinnyPdl::kRing, cuda::SkinnyPdl::kRingL2}) {
        Tensor x = producer == 2 ? big.slice(0, rows - sh.m, rows)
                                 : Tensor::empty({sh.m, sh.k}, DType::kBF16, s.gpu.device());
        copy(s.gpu, old_x, x);
        Tensor out = poisoned_gpu(s, {sh.m, sh.n}, DType::kBF16);
        s.gpu.synchronize();
        if (producer == 0) cuda::linear_skinny(s.gpu, a, b, Tensor(), x, 0, cuda::SkinnyPdl::kRingL2);
        if (producer == 1) cuda::linear_cublaslt(s.gpu, a, b, Tensor(), x);
        if (producer == 2) copy(s.gpu, big_src, big);
        cuda::linear_skinny(s.gpu, x, w, Tensor(), out, 0, pdl);
        const Tensor x_final = s.down(x);
        Tensor want = Tensor::empty({sh.m, sh.n}, DType::kBF16);
        linear(s.cpu, x_final, w_host, want);
        const std::string what = "M=" + std::to_string(sh.m) + " K=" + std::to_string(sh.k) +
                                 " N=" + std::to_string(sh.n) + " producer " +
                                 (producer == 0 ? "skinny+PDL" : producer == 1 ? "cuBLASLt" : "copy") +
                                 " SkinnyPdl " + std::to_string(int(pdl));
        cudatest::expect_close(s, want, out, cudatest::kBf16Rel, 2e-5, what);
      }
    }
  }
}

// The same inside a CUDA graph: producer (skinny with PDL, from new inputs at every
// replay) and consumer captured together, the programmatic edge in the graph; each
// replay's result must be the CPU linear of that replay's x, not the previous one's.
TEST(CudaGemmSkinny, PdlGraphReplayReadsThisReplaysActivations) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t m = 4, k = 4096, n = 12352, kp = 8192;
  const Tensor w = s.up(host_rand({n, k}, DType::kBF16, 1.0 / 64, 800));
  const Tensor b = s.up(host_rand({k, kp}, DType::kBF16, 1.0 / std::sqrt(double(kp)), 801));
  Tensor a = s.up(host_rand({m, kp}, DType::kBF16, 1.0, 802));
  Tensor x = s.up(host_rand({m, k}, DType::kBF16, 1.0, 803));
  Tensor out = Tensor::empty({m, n}, DType::kBF16, s.gpu.device());
  Tensor out2 = Tensor::empty({m, k}, DType::kBF16, s.gpu.device());
  // producer -> consumer -> a second PDL consumer of the first one's output slice.
  auto step = [&] {
    cuda::linear_skinny(s.gpu, a, b, Tensor(), x, 0, cuda::SkinnyPdl::kRingL2);
    cuda::linear_skinny(s.gpu, x, w, Tensor(), out, 0, cuda::SkinnyPdl::kRingL2);
    cuda::linear_skinny(s.gpu, out.slice(1, 0, k), b.slice(1, 0, k), Tensor(), out2, 0,
                        cuda::SkinnyPdl::kRing);
  };
  step();  // warm-up outside the capture
  s.gpu.synchronize();
  s.gpu.begin_capture();
  step();
  cuda::GraphExecPtr g = s.gpu.end_capture();
  for (uint64_t seed : {810u, 820u, 830u}) {
    copy(s.gpu, s.up(host_rand({m, kp}, DType::kBF16, 1.0, seed)), a);
    copy(s.gpu, s.up(host_rand({m, k}, DType::kBF16, 1.0, seed + 1)), x);  // stale x
    s.gpu.synchronize();
    s.gpu.replay(*g);
    const Tensor x_final = s.down(x), out_final = s.down(out);
    Tensor want = Tensor::empty({m, n}, DType::kBF16);
    linear(s.cpu, x_final, s.down(w), want);
    cudatest::expect_close(s, want, out_final, cudatest::kBf16Rel, 2e-5,
                           "replay " + std::to_string(seed) + " consumer");
    Tensor want2 = Tensor::empty({m, k}, DType::kBF16);
    linear(s.cpu, contiguous(s.cpu, out_final.slice(1, 0, k)),
           contiguous(s.cpu, s.down(b).slice(1, 0, k)), want2);
    cudatest::expect_close(s, want2, out2, cudatest::kBf16Rel, 2e-5,
                           "replay " + std::to_string(seed) + " second consumer");
  }
  g.reset();
  s.gpu.synchronize();
  cuda::release_graph_pool(0);
}

#endif  // VTLLM_WITH_CUDA

}  // namespace
}  // namespace vt
