// vtllm bench vision: the multimodal path's speed in-process (no server).
//
// Builds DIR's engine once (dummy weights work: --load-format dummy) and runs, each
// part optional:
//   tower: B square images of `image_size` pixels as random pixel_values on the device
//     (patch rows as the processor lays them out); one warm-up, then `repeats` timed
//     encode() calls per batch size (host wall clock around a stream synchronize;
//     median): ms, images/s, patches/s and the tower's FLOPs (the GEMMs and attention,
//     counted from the config) against the H200's dense bf16 ceiling. With profile_ops,
//     each row adds the per-op breakdown of `profile_steps` more encodes (vt::Profiler,
//     region "vision"; one unrecorded encode first).
//   ttft: a chat of one image_size^2 image between text_tokens random text ids, built as
//     the chat template lays it out (text, vision_start, image_pad, vision_end, text) and
//     expanded with the processor's grid; time to its first token through LlmEngine
//     (max_tokens 1), median of `repeats` after one warm-up. "with processor" starts from
//     the encoded JPEG in memory (libjpeg, deterministic content): decode + the image
//     processor + expansion + the engine's step (tower, prefill, sample); "tower +
//     prefill" starts from the processed input. Every request carries a new image, so
//     the encoder cache never hits (the JSON counts the encodes); prefix caching is off.
//   video: a video_seconds clip of video_width x video_height at video_source_fps,
//     its processor-sampled frames synthesised in memory (no container decode),
//     through the video processor (frame sampling at the processor's fps, resize,
//     temporal patching) and the tower: processor ms, tower ms (median), patches/s.
//   cpu: images_per_thread x N JPEGs decoded and preprocessed on a MediaPool of N
//     threads, for each N of cpu_threads (default 1 and the hardware threads): wall ms,
//     ms per image, images/s.
// The processor settings are DIR's files; a directory without them (bench/models/)
// takes Qwen3.5's published ones with the patch geometry of config.json's vision_config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/config.h"
#include "io/weight_loader.h"
#include "vt/device.h"

namespace vtllm::bench {

struct VisionBenchConfig {
  std::string dir;
  vt::Device device = vt::Device::cuda(0);
  io::LoadFormat load_format = io::LoadFormat::kAuto;
  double gpu_memory_utilization = 0.9;
  std::vector<int> images{1, 16};  // tower rows: images per encode call
  int64_t image_size = 1024;       // pixels per side; a multiple of patch * merge
  int repeats = 5;
  bool profile_ops = false;
  int profile_steps = 3;
  bool tower = true, ttft = true, video = true, cpu = true;  // the parts to run
  int64_t text_tokens = 64;
  double video_seconds = 30, video_source_fps = 30;
  int64_t video_width = 1280, video_height = 720;
  std::vector<int> cpu_threads;  // empty: 1 and std::thread::hardware_concurrency()
  int images_per_thread = 2;
  uint64_t seed = 0;
};

// FLOPs of one encode of `n_images` square images of `grid` x `grid` patches.
double vision_tower_flops(const io::VisionConfig& v, int64_t grid, int64_t n_images);

// Runs the bench, printing its tables to stdout; returns the results as JSON text.
std::string run_vision_bench(const VisionBenchConfig& c);

}  // namespace vtllm::bench
