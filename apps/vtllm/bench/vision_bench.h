// vtllm bench vision: the vision tower's speed in-process (no processor, no server).
//
// Loads DIR's multimodal model (dummy weights work: --load-format dummy), makes B
// square images of `image_size` pixels as random pixel_values on the device (patch rows
// as the processor lays them out), runs the tower once to warm up, then `repeats` timed
// encode() calls per batch size (host wall clock around a stream synchronize; median).
// Each row prints ms per call, images/s, patches/s and the tower's FLOPs (the GEMMs
// and attention, counted from the config) against the H200's dense bf16 ceiling.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/weight_loader.h"
#include "vt/device.h"

namespace vtllm::bench {

struct VisionBenchConfig {
  std::string dir;
  vt::Device device = vt::Device::cuda(0);
  io::LoadFormat load_format = io::LoadFormat::kAuto;
  std::vector<int> images{1, 16};
  int64_t image_size = 1024;  // pixels per side; a multiple of patch * merge
  int repeats = 5;
};

// FLOPs of one encode of `n_images` square images of `grid` x `grid` patches.
double vision_tower_flops(const io::VisionConfig& v, int64_t grid, int64_t n_images);

// Runs the bench and prints its table to stdout.
void run_vision_bench(const VisionBenchConfig& c);

}  // namespace vtllm::bench
