// CUDA arms of vt/ops/rope.h; no CUDA headers. Arguments arrive validated. Defined in
// cuda/rope/.
#pragma once

#include <vector>

#include "vt/ops/args.h"

namespace vt::cuda {

// x, out: [T * heads, head_dim] row views of the [T, heads, head_dim] tensors (row
// t * heads + h is token t's head h); cos_sin [T, R] f32 contiguous on the device.
void rope_neox(Stream& s, const Rows& x, const Tensor& cos_sin, int64_t heads, const Rows& out,
               bool f32_math);
// The 1-D table from device positions [T] (i32/i64) and the host's f32 inv_freq [R/2]
// (R <= 1024) into out [T, R] f32 contiguous.
void rope_cos_sin_1d(Stream& s, const Tensor& positions, const std::vector<float>& inv_freq,
                     const Tensor& out);

}  // namespace vt::cuda
