// Helpers of the CUDA-vs-CPU op tests: random inputs made on the host, the same op
// run on both backends, outputs compared elementwise with a stated tolerance.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "vt/ops/copy.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cudatest {

// Changes `stream`'s kernel switches (vt/kernel_config.h, read by the op arms at each
// call) by `edit` for one scope, then restores the previous ones:
//   ScopedKernels fused(s.gpu, [](KernelConfig& k) { k.gdn_fused = Toggle::kOn; });
class ScopedKernels {
 public:
  template <class Edit>
  ScopedKernels(Stream& stream, Edit edit) : stream_(stream), previous_(stream.kernel_config()) {
    KernelConfig k = previous_;
    edit(k);
    stream_.set_kernel_config(k);
  }
  ~ScopedKernels() { stream_.set_kernel_config(previous_); }
  ScopedKernels(const ScopedKernels&) = delete;
  ScopedKernels& operator=(const ScopedKernels&) = delete;

 private:
  Stream& stream_;
  KernelConfig previous_;
};

struct Streams {
  Stream cpu{Device::cpu()};
  Stream gpu{Device::cuda(0)};
  Tensor up(const Tensor& t) { return to_device(gpu, contiguous(cpu, t), gpu.device()); }
  Tensor down(const Tensor& t) { return to_device(gpu, t, Device::cpu()); }
};

// Random normals (mean 0, `scale`) rounded to dtype, on the CPU; never all zero.
inline Tensor randn(const Shape& shape, DType dtype, double scale, uint64_t seed) {
  Tensor f = Tensor::empty(shape, DType::kF32);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, float(scale));
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = d(rng);
  Stream s(Device::cpu(), 1);
  return to_dtype(s, f, dtype);
}

inline Tensor uniform(const Shape& shape, float lo, float hi, uint64_t seed) {
  Tensor f = Tensor::empty(shape, DType::kF32);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = d(rng);
  return f;
}

// A host i32 vector as a CPU tensor (request starts, slots, slot mappings).
inline Tensor i32(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::kI32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

// An output on the GPU with every byte 0xff (NaN in every float dtype).
inline Tensor poisoned_gpu(Streams& s, const Shape& shape, DType dtype) {
  Tensor host = Tensor::empty(shape, dtype);
  std::memset(host.data_ptr(), 0xff, host.nbytes());
  return s.up(host);
}

// Compares `got` (any device) to the CPU result `want`: every finite element must satisfy
// |got - want| <= rel * |want| + abs * rms(want) (rms over want's finite elements) with a
// finite got; where want is NaN got must be NaN, where it is +-Inf got must equal it.
// Returns the worst ratio of error to allowance (<= 1 passes), reported with `what`.
inline double expect_close(Streams& s, const Tensor& want, const Tensor& got, double rel,
                           double abs, const std::string& what) {
  Tensor w = to_dtype(s.cpu, contiguous(s.cpu, want), DType::kF32);
  Tensor g = to_dtype(s.cpu, got.device().is_cpu() ? contiguous(s.cpu, got) : s.down(got),
                      DType::kF32);
  EXPECT_EQ(w.numel(), g.numel()) << what;
  double ss = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    const double a = w.data<float>()[i];
    if (std::isfinite(a)) ss += a * a, ++finite;
  }
  const double rms = std::sqrt(ss / double(std::max<int64_t>(finite, 1)));
  double worst = 0;
  int64_t worst_i = 0, bad = 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    const double a = w.data<float>()[i], b = g.data<float>()[i];
    const double allow = rel * std::fabs(a) + abs * rms + 1e-30;
    double r;
    if (std::isnan(a))
      r = std::isnan(b) ? 0.0 : INFINITY;
    else if (std::isinf(a))
      r = a == b ? 0.0 : INFINITY;
    else
      r = std::isfinite(b) ? std::fabs(a - b) / allow : INFINITY;
    if (r > 1) ++bad;
    if (r > worst) worst = r, worst_i = i;
  }
  EXPECT_LE(worst, 1.0) << what << ": " << bad << " of " << w.numel()
                        << " elements out of tolerance; worst at " << worst_i << ": cpu "
                        << w.data<float>()[worst_i] << " cuda " << g.data<float>()[worst_i]
                        << " (rel " << rel << ", abs " << abs << " x rms " << rms << ")";
  return worst;
}

// One bf16 rounding is at most 2^-9 relative; two results rounded from f32 values that
// differ slightly can land one bf16 ulp apart (2^-8 relative, 2^-7 below a power of 2).
inline constexpr double kBf16Rel = 1.0 / 128;
// A chain of bf16 roundings (silu then the product; norm, weight, gate; conv then silu;
// norm then the rotation's products and sum): an intermediate one backend rounds to the
// neighbouring value moves the result up to about two ulps.
inline constexpr double kBf16ChainRel = 2 * kBf16Rel;

#define VT_REQUIRE_GPU() \
  if (::vt::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"

}  // namespace vt::cudatest
