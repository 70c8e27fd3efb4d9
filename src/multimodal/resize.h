// Antialiased bicubic resize of 8-bit RGB images, bit-exact with torchvision's
// `resize(uint8 CHW tensor, BICUBIC, antialias=True)` on the CPU, which runs PyTorch's native
// uint8 kernel (`_upsample_bicubic2d_aa`: UpSampleKernel.cpp's int16-weight separable path and
// its AVX2 twin in UpSampleKernelAVXAntialias.h; both give the same integers).
//
// Per axis (in -> out samples, scale = in / out in double): support = 2 * max(scale, 1),
// taps = ceil(support) * 2 + 1, Keys cubic with a = -0.5 evaluated at
// (j + xmin - center + 0.5) / max(scale, 1), weights normalised, then quantised to int16 with
// the largest precision p (< 22) that keeps round(max weight * 2^(p+1)) < 2^15. A pass computes
// clamp((2^(p-1) + sum w * pixel) >> p, 0, 255); the width pass runs first, then the height
// pass on its (clamped uint8) output; an axis whose size does not change is not resampled.
//
// Thread-safety: pure functions; callable from any thread concurrently.
#pragma once

#include <cstdint>
#include <vector>

#include "multimodal/image.h"
#include "multimodal/parallel.h"

namespace vtllm::multimodal {

// One axis's quantised filter: output i reads input samples [start[i], start[i] + count[i])
// with weights[i * taps + j], j < count[i].
struct ResizeAxis {
  int64_t taps = 0;
  std::vector<int64_t> start, count;
  std::vector<int16_t> weights;
  unsigned precision = 0;
};

// The filter for resampling `in` samples to `out` (both >= 1).
ResizeAxis resize_axis(int64_t in, int64_t out);

// `src` resized to out_h x out_w (both >= 1); a copy when the size is unchanged. Rows are
// split over `loop` (empty: this thread), with the same result.
Image resize_bicubic_aa(const Image& src, int64_t out_h, int64_t out_w,
                        const ParallelFor& loop = {});

}  // namespace vtllm::multimodal
