// What the CUDA kernel benchmarks (bench/cuda_<family>_bench.cpp) share: random device
// data, CUDA-event timing, the L2 flush and the printed row against the H200 ceilings
// measured on this workplace's machine: ~4.3 TB/s copy (read + write), ~790 TFLOP/s
// dense bf16 (~67 TFLOP/s f32 on CUDA cores, the datasheet's, for the rows that say so).
// Each benchmark runs its op as the engine calls it (index uploads included), median of
// 15 runs after 3 warm-ups, on random (never zero) data.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "vt/cuda/api.h"
#include "vt/cuda/stream_state.h"
#include "vt/ops/copy.h"
#include "vt/stream.h"

namespace vtbench {

inline constexpr double kCopyTBs = 4.3, kBf16TFlops = 790.0, kF32TFlops = 67.0;

// The benchmark's GPU stream (set by main) and a CPU stream for host-side conversions.
inline vt::Stream* g_gpu = nullptr;
inline vt::Stream& cpu() {
  static vt::Stream s(vt::Device::cpu());
  return s;
}

// Random normals on the GPU: 16M values drawn once on the host, scaled, rotated by
// `seed`, uploaded, and tiled over larger tensors by device copies (so big tensors
// cost no host time; the period, 32 MiB of bf16, is far from zero and past L2).
inline vt::Tensor rand_gpu(const vt::Shape& shape, vt::DType dt, float scale = 1.0f,
                           uint64_t seed = 1) {
  static std::vector<float> pool = [] {
    std::vector<float> v(size_t(1) << 24);
    std::mt19937_64 rng(42);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (float& x : v) x = d(rng);
    return v;
  }();
  const int64_t n = vt::shape_numel(shape), chunk = std::min<int64_t>(n, int64_t(pool.size()));
  vt::Tensor f = vt::Tensor::empty({chunk}, vt::DType::kF32);
  for (int64_t i = 0; i < chunk; ++i)
    f.data<float>()[i] = scale * pool[size_t((i + int64_t(seed) * 7919) % int64_t(pool.size()))];
  vt::Tensor piece = vt::to_device(*g_gpu, vt::to_dtype(cpu(), f, dt), g_gpu->device());
  vt::Tensor out = vt::Tensor::empty({n}, dt, g_gpu->device());
  for (int64_t at = 0; at < n; at += chunk) {
    const int64_t len = std::min(chunk, n - at);
    vt::Tensor dst = out.slice(0, at, at + len);
    vt::copy(*g_gpu, piece.slice(0, 0, len), dst);
  }
  return out.view(shape);
}

// A device buffer past the H200's 50 MB L2, for time_ms's flush.
inline vt::Tensor l2_flush_buffer() {
  return vt::Tensor::empty({int64_t(256) << 20}, vt::DType::kU8, g_gpu->device());
}

// Median milliseconds of fn over 15 event-timed runs after 3 warm-ups. With `flush`,
// L2 is flushed before each run (a memset of it outside the timed events): a decode step
// streams every weight from HBM once, so warm-L2 timings would flatter the small
// projections.
inline double time_ms(const std::function<void()>& fn, const vt::Tensor* flush = nullptr) {
  cudaStream_t st = g_gpu->cuda_state().stream;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) fn();
  g_gpu->synchronize();
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    if (flush) cudaMemsetAsync(flush->data_ptr(), i, flush->nbytes(), st);
    cudaEventRecord(a, st);
    fn();
    cudaEventRecord(b, st);
    cudaEventSynchronize(b);
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// One printed row: time, bytes / time against the copy ceiling, flops / time against
// `tflops_ceiling` (bf16 tensor cores unless the row says otherwise).
inline void row(const std::string& name, double ms, double bytes, double flops,
                double tflops_ceiling = kBf16TFlops) {
  const double gbs = bytes / ms / 1e6, tfs = flops / ms / 1e9;
  std::printf("%-58s %9.3f ms %8.0f GB/s %5.1f%% %8.1f TFLOP/s %5.1f%%\n", name.c_str(), ms, gbs,
              100.0 * gbs / (kCopyTBs * 1000), tfs, 100.0 * tfs / tflops_ceiling);
}

// The column heads of row(), `what` naming the rows.
inline void header(const char* what) {
  std::printf("%-58s %12s %13s %6s %15s %6s\n", what, "median", "bytes/time", "of 4.3",
              "flops/time", "of 790");
}

// The copy ceiling re-measured in this run: a 1 GiB device copy.
inline void copy_ceiling_row() {
  const int64_t n = int64_t(1) << 29;  // 1 GiB of bf16
  vt::Tensor a = rand_gpu({n}, vt::DType::kBF16), b = rand_gpu({n}, vt::DType::kBF16, 1, 2);
  row("copy bf16 1 GiB (cudaMemcpyAsync: the ceiling)", time_ms([&] { vt::copy(*g_gpu, a, b); }),
      2.0 * double(n) * 2, 0);
}

inline vt::Tensor i32(const std::vector<int32_t>& v) {
  vt::Tensor t = vt::Tensor::empty({int64_t(v.size())}, vt::DType::kI32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

// Runs fn with the GPU stream's kernel switches changed by `edit` (vt/kernel_config.h),
// then restores them: the rows that time a kernel the shipped rule would not pick.
inline void with_kernels(const std::function<void(vt::KernelConfig&)>& edit,
                         const std::function<void()>& fn) {
  const vt::KernelConfig saved = g_gpu->kernel_config();
  vt::KernelConfig k = saved;
  edit(k);
  g_gpu->set_kernel_config(k);
  fn();
  g_gpu->set_kernel_config(saved);
}

// main()'s start: false (after a note naming `bench`) without a GPU; else g_gpu = &gpu
// (main's stream, which outlives every device tensor) and a line with its switches.
inline bool have_gpu(const char* bench) {
  if (vt::cuda_device_count() > 0) return true;
  std::printf("%s: no CUDA device, nothing measured\n", bench);
  return false;
}
inline void use_gpu(const char* bench, vt::Stream& gpu) {
  g_gpu = &gpu;
  std::printf("%s: kernel switches %s\n", bench, gpu.kernel_config().str().c_str());
}

}  // namespace vtbench
