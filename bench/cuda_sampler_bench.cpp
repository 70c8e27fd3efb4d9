// The sampler per engine step at Qwen's vocabulary (151936), batch 1, 8 and 64, bf16
// logits on the GPU: the device path (Sampler::device_batch + vt::sample: parameters
// up, one kernel, ids and logprobs down) against the host path it replaces (logits
// widened to f32 on the device, copied to the host, the CPU Sampler). Wall-clock
// median of 15 runs after 3 warm-ups, the call as the engine makes it (both end
// synchronized). Ceilings printed with each: the device path's floor is one read of
// the bf16 logits at 4.3 TB/s; the host path's copy alone is timed as its own row.
//
//   cuda_sampler_bench      (needs a GPU; exits 0 with a note without one)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "vt/device.h"
#include "vt/ops/copy.h"
#include "vt/ops/sampling.h"
#include "vt/stream.h"

namespace {

using vtllm::engine::Sampler;
using vtllm::engine::SamplerRow;
using vtllm::engine::SamplingParams;

constexpr int64_t kVocab = 151936;
constexpr double kCopyTBs = 4.3;

double time_ms(const std::function<void()>& fn) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Config {
  const char* name;
  SamplingParams params;
};

std::vector<Config> configs() {
  std::vector<Config> c(4);
  c[0].name = "greedy";
  c[0].params.temperature = 0.0f;
  c[1].name = "T 0.7, top_p 0.9";
  c[1].params.temperature = 0.7f;
  c[1].params.top_p = 0.9f;
  c[2].name = "T 0.7, top_k 50, top_p 0.9, min_p 0.05";
  c[2].params.temperature = 0.7f;
  c[2].params.top_k = 50;
  c[2].params.top_p = 0.9f;
  c[2].params.min_p = 0.05f;
  c[3].name = "T 1, top_p 0.95, penalties, logprobs 5";
  c[3].params.top_p = 0.95f;
  c[3].params.repetition_penalty = 1.1f;
  c[3].params.frequency_penalty = 0.3f;
  c[3].params.logprobs = 5;
  return c;
}

}  // namespace

int main() {
  if (vt::cuda_device_count() == 0) {
    std::printf("cuda_sampler_bench: no CUDA device, nothing measured\n");
    return 0;
  }
  vt::Stream gpu(vt::Device::cuda(0)), cpu(vt::Device::cpu());
  std::printf("%-44s %5s %11s %11s %11s %9s\n", "sampling (vocab 151936, bf16 logits)", "batch",
              "device ms", "host ms", "copy ms", "floor ms");
  std::mt19937 rng(1);
  std::vector<int32_t> prompt(1000), output(200);
  for (auto& t : prompt) t = int32_t(rng() % kVocab);
  for (auto& t : output) t = int32_t(rng() % kVocab);
  for (const Config& c : configs()) {
    for (int64_t batch : {1, 8, 64}) {
      vt::Tensor f = vt::Tensor::empty({batch, kVocab}, vt::DType::kF32);
      std::normal_distribution<float> d(0.0f, 2.5f);
      for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = d(rng);
      const vt::Tensor logits = vt::to_device(gpu, vt::to_dtype(cpu, f, vt::DType::kBF16), gpu.device());
      std::vector<SamplerRow> rows(size_t(batch), SamplerRow{&c.params, prompt, output, {}});
      Sampler device({.seed = 1}), host({.seed = 1});
      const double dev_ms = time_ms([&] { vt::sample(gpu, logits, device.device_batch(rows, kVocab)); });
      vt::Tensor host_logits;
      const double copy_ms = time_ms([&] {
        host_logits = vt::to_device(gpu, vt::to_dtype(gpu, logits, vt::DType::kF32), vt::Device::cpu());
      });
      const double host_ms = time_ms([&] {
        const vt::Tensor h =
            vt::to_device(gpu, vt::to_dtype(gpu, logits, vt::DType::kF32), vt::Device::cpu());
        host.sample(std::span<const float>(h.data<float>(), size_t(h.numel())), kVocab, rows);
      });
      const double floor_ms = double(batch * kVocab * 2) / (kCopyTBs * 1e9);
      std::printf("%-44s %5lld %11.3f %11.3f %11.3f %9.4f\n", c.name, (long long)batch, dev_ms,
                  host_ms, copy_ms, floor_ms);
    }
  }
  return 0;
}
