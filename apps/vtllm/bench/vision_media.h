// Deterministic media for `bench vision`, made in memory: a JPEG to decode (libjpeg, as
// a client would send it) and video frames (there is no container decoder on the GPU
// machine, so the frames the processor samples are synthesised directly).
#pragma once

#include <cstdint>
#include <vector>

#include "multimodal/image.h"

namespace vtllm::bench {

// A width x height baseline JPEG (quality 90, 4:2:0) of a smooth scene with texture:
// gradients, soft discs and low-amplitude noise, a function of `seed` only, so its
// size and decode cost resemble a photograph's more than a flat image's.
std::vector<uint8_t> synth_jpeg(int64_t width, int64_t height, uint32_t seed);

// Frame `index` of a synthetic clip: the scene of synth_jpeg drifting by a few pixels
// per frame (RGB, HWC).
multimodal::Image synth_frame(int64_t width, int64_t height, int64_t index, uint32_t seed);

}  // namespace vtllm::bench
