// CPU time of the image and video processors (multimodal/image_processor.h,
// video_processor.h) on synthetic RGB input with Qwen3.5's published processor settings:
// one 1024x1024 image (4096 patches, 24 MiB of f32 pixel values), one 1280x720 frame
// resized to the video processor's 832x480, and a 30 s 720p clip at 2 fps (60 frames),
// each on a media pool of 1, 2, 4, ... threads (the processor's own parallel loop). The
// counters give MB/s of f32 pixel values written. Decoding is not included (see
// `vtllm bench vision --parts cpu`).
//
//   build/bench/media_bench [--benchmark_filter=Video]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "multimodal/image_processor.h"
#include "multimodal/media_pool.h"
#include "multimodal/processor_config.h"
#include "multimodal/resize.h"
#include "multimodal/video_processor.h"

namespace {

using namespace vtllm::multimodal;

// A smooth gradient with a little texture: every pixel differs, nothing compresses away.
Image scene(int64_t w, int64_t h, uint32_t seed) {
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.resize(size_t(w * h * 3));
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t c = 0; c < w; ++c) {
      x = x * 1664525u + 1013904223u;
      uint8_t* p = &img.rgb[size_t((y * w + c) * 3)];
      p[0] = uint8_t((c * 255 / w + (x >> 28)) & 255);
      p[1] = uint8_t((y * 255 / h + (x >> 24 & 15)) & 255);
      p[2] = uint8_t(((c + y) * 127 / (w + h) + (x >> 20 & 15)) & 255);
    }
  return img;
}

// Qwen3.5's preprocessor_config.json / video_preprocessor_config.json.
ProcessorConfig qwen3_5() {
  ProcessorConfig pc;
  pc.image.patch_size = pc.video.frame.patch_size = 16;
  pc.image.merge_size = pc.video.frame.merge_size = 2;
  pc.image.temporal_patch_size = pc.video.frame.temporal_patch_size = 2;
  pc.image.min_pixels = 65536;
  pc.image.max_pixels = 16777216;
  pc.video.frame.min_pixels = 4096;
  pc.video.frame.max_pixels = 25165824;
  pc.video.fps = 2.0;
  return pc;
}

// A pool of `threads` and its loop (1: the serial loop, no pool).
struct Pool {
  explicit Pool(int threads) : pool(threads > 1 ? std::make_unique<MediaPool>(threads) : nullptr) {}
  ParallelFor loop() const { return pool ? pool->parallel_for() : ParallelFor{}; }
  std::unique_ptr<MediaPool> pool;
};

void BM_ProcessImage1024(benchmark::State& state) {
  const Image img = scene(1024, 1024, 1);
  const ProcessorConfig pc = qwen3_5();
  const Pool pool(int(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    VisionInput v = process_image(img, pc.image, pool.loop());
    bytes = v.pixel_values.size() * sizeof(float);
    benchmark::DoNotOptimize(v.hash);
  }
  state.counters["MB/s"] = benchmark::Counter(double(bytes) * 1e-6 * double(state.iterations()),
                                              benchmark::Counter::kIsRate);
}

void BM_ResizeFrame720p(benchmark::State& state) {
  const Image img = scene(1280, 720, 2);
  for (auto _ : state) {
    Image out = resize_bicubic_aa(img, 480, 832);
    benchmark::DoNotOptimize(out.rgb.data());
  }
}

void BM_ProcessVideo720p60(benchmark::State& state) {
  std::vector<Image> frames;
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < 60; ++i) {
    frames.push_back(scene(1280, 720, uint32_t(10 + i)));
    idx.push_back(i * 15);
  }
  const ProcessorConfig pc = qwen3_5();
  const Pool pool(int(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    VisionInput v = process_video(frames, idx, 30.0, pc.video, pool.loop());
    bytes = v.pixel_values.size() * sizeof(float);
    benchmark::DoNotOptimize(v.hash);
  }
  state.counters["MB/s"] = benchmark::Counter(double(bytes) * 1e-6 * double(state.iterations()),
                                              benchmark::Counter::kIsRate);
}

void thread_counts(benchmark::internal::Benchmark* b) {
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int t = 1; t < hw; t *= 2) b->Arg(t);
  b->Arg(hw);
}

BENCHMARK(BM_ProcessImage1024)->Apply(thread_counts)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ResizeFrame720p)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProcessVideo720p60)
    ->Apply(thread_counts)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
