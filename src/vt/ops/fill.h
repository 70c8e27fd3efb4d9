// Filling a tensor with one value.
//
// fill(s, t, value): every element of t (any strides) = value converted to t's dtype
//   (floats round to nearest even; integers take the value truncated toward zero).
// zero(s, t): fill(s, t, 0) (e.g. a GDN state slot at the start of a sequence).
// Backends: CPU and CUDA (t on the stream's device).
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

void fill(Stream& s, Tensor& t, double value);
inline void zero(Stream& s, Tensor& t) { fill(s, t, 0.0); }

}  // namespace vt
