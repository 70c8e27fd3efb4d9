// Row loads and stores for CPU kernels (internal to vt): kernels compute on f32
// rows, so one switch per row replaces a template instantiation per dtype pair.
#pragma once

#include <cstdint>

#include "vt/dtype.h"

namespace vt::cpu {

// dst[i] = widen(src[i]) for i < n; src holds n contiguous elements of a float dtype.
void load_row(const void* src, DType dt, int64_t n, float* dst);
// dst[i] = narrow(src[i]) (round to nearest even) for i < n.
void store_row(const float* src, int64_t n, DType dt, void* dst);

}  // namespace vt::cpu
