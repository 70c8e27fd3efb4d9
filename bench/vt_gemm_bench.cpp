// CPU linear (vt/ops/gemm.h): out[M, N] = x[M, K] . w[N, K]^T on the machine's
// thread pool. Compares weights kept in bf16 and widened on the fly (what vt does)
// against the same weights widened to f32 at load, at Qwen3-0.6B shapes
// (hidden 1024, MLP 3072). Reports GFLOP/s and weight GB/s; the ceiling for M=1
// is memory bandwidth (weight bytes / time), for large M the FMA throughput.
#include <benchmark/benchmark.h>

#include <random>

#include "vt/ops/copy.h"
#include "vt/ops/gemm.h"

namespace {

vt::Stream& stream() {
  static vt::Stream s(vt::Device::cpu());
  return s;
}

vt::Tensor random(const vt::Shape& shape, vt::DType dt) {
  vt::Tensor f = vt::Tensor::empty(shape, vt::DType::kF32);
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = d(rng);
  return vt::to_dtype(stream(), f, dt);
}

// args: M, K, N, weight dtype (0 f32 = widened at load, 1 bf16 = widened on the fly)
void BM_Linear(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const vt::DType wdt = state.range(3) ? vt::DType::kBF16 : vt::DType::kF32;
  vt::Tensor x = random({m, k}, vt::DType::kF32), w = random({n, k}, wdt);
  vt::Tensor out = vt::Tensor::empty({m, n}, vt::DType::kF32);
  for (auto _ : state) {
    vt::linear(stream(), x, w, out);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(double(2 * m * k * n) * double(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
  state.counters["wGB/s"] = benchmark::Counter(double(w.nbytes()) * double(state.iterations()) / 1e9,
                                               benchmark::Counter::kIsRate);
  state.SetLabel(std::string("w ") + vt::dtype_name(wdt) + " threads " +
                 std::to_string(stream().num_threads()));
}

BENCHMARK(BM_Linear)
    ->ArgNames({"M", "K", "N", "bf16"})
    ->Args({1, 1024, 3072, 0})
    ->Args({1, 1024, 3072, 1})
    ->Args({1, 3072, 1024, 0})
    ->Args({1, 3072, 1024, 1})
    ->Args({64, 1024, 3072, 0})
    ->Args({64, 1024, 3072, 1})
    ->Args({256, 1024, 1024, 0})
    ->Args({256, 1024, 1024, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
