// CUDA arm of vt/ops/norm.h (no CUDA headers; defined in cuda/norm/rms_norm.cu).
// Arguments arrive validated, as [rows, cols] views.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/norm.h"

namespace vt::cuda {

void rms_norm(Stream& s, const Rows& x, const Tensor& w, float eps, RmsNormKind kind, const Rows& out);

}  // namespace vt::cuda
