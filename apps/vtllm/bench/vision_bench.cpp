#include "bench/vision_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "base/error.h"
#include "bench/throughput_bench.h"
#include "models/registry.h"
#include "vt/ops/copy.h"
#include "vt/stream.h"

namespace vtllm::bench {

double vision_tower_flops(const io::VisionConfig& v, int64_t grid, int64_t n_images) {
  const double n = double(grid * grid);  // patches per image
  const double h = double(v.hidden_size), i = double(v.intermediate_size);
  const double pd = double(v.in_channels * v.temporal_patch_size * v.patch_size * v.patch_size);
  const double m2 = double(v.spatial_merge_size * v.spatial_merge_size);
  double per_image = 2 * n * pd * h;  // patch embedding
  // Per block: qkv, proj, fc1, fc2, and attention over the image's n patches
  // (QK^T and PV: 2 * 2 * n^2 * h).
  per_image += double(v.depth) * (2 * n * h * 3 * h + 2 * n * h * h + 2 * 2 * n * h * i +
                                  4 * n * n * h);
  // Merger: fc1 (m2 h -> m2 h) and fc2 (m2 h -> out) on n / m2 rows.
  per_image += 2 * (n / m2) * (m2 * h) * (m2 * h) + 2 * (n / m2) * (m2 * h) * double(v.out_hidden_size);
  return per_image * double(n_images);
}

void run_vision_bench(const VisionBenchConfig& c) {
  vt::Stream s(c.device);
  models::LoadConfig load;
  load.device = c.device;
  load.format = c.load_format;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<models::Model> model = models::load_model(c.dir, s, load);
  s.synchronize();
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  models::VisionTower* tower = model->vision_tower();
  VT_REQUIRE(tower, c.dir, ": ", model->config().architecture_class, " has no vision tower");
  const io::VisionConfig& v = *model->config().vision;
  const int64_t factor = v.patch_size * v.spatial_merge_size;
  VT_REQUIRE(c.image_size > 0 && c.image_size % factor == 0, "--image-size ", c.image_size,
             ": expected a positive multiple of ", factor, " (patch x merge)");
  const int64_t grid = c.image_size / v.patch_size;
  std::printf("bench vision: %s on %s, %s, %d blocks x %lld wide, %lld heads; %lldx%lld images "
              "= %lld patches, %lld LLM tokens each; loaded in %.1f s\n",
              c.dir.c_str(), c.device.str().c_str(), model->config().architecture_class.c_str(),
              int(v.depth), (long long)v.hidden_size, (long long)v.num_heads,
              (long long)c.image_size, (long long)c.image_size, (long long)(grid * grid),
              (long long)(grid * grid / (v.spatial_merge_size * v.spatial_merge_size)), load_s);
  std::printf("%7s %10s %10s %12s %9s %8s\n", "images", "ms", "images/s", "patches/s", "TFLOP/s",
              "of peak");
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int b : c.images) {
    VT_REQUIRE(b > 0, "--images: ", b, " is not positive");
    const int64_t rows = int64_t(b) * grid * grid;
    vt::Tensor host = vt::Tensor::empty({rows, tower->patch_dim()}, vt::DType::kF32);
    float* p = host.data<float>();
    for (int64_t k = 0; k < host.numel(); ++k) p[k] = u(rng);
    const vt::Tensor pixels = vt::to_device(s, host, c.device);
    const std::vector<models::VisionGrid> grids(size_t(b), models::VisionGrid{1, grid, grid});
    tower->encode(s, pixels, grids);  // warm-up (allocator, cuBLASLt heuristics)
    s.synchronize();
    std::vector<double> ms;
    for (int r = 0; r < c.repeats; ++r) {
      const auto a = std::chrono::steady_clock::now();
      tower->encode(s, pixels, grids);
      s.synchronize();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    const double tflops = vision_tower_flops(v, grid, b) / (med * 1e-3) / 1e12;
    std::printf("%7d %10.2f %10.1f %12.0f %9.1f %7.1f%%\n", b, med, b / (med * 1e-3),
                double(rows) / (med * 1e-3), tflops, 100.0 * tflops / kBf16CeilingTflops);
    std::fflush(stdout);
  }
}

}  // namespace vtllm::bench
