// CUDA arm of add_rms_norm (vt/ops/norm.h); no CUDA headers. Arguments arrive
// validated, as [rows, cols] views of contiguous tensors. Defined in add_rms_norm.cu.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/norm.h"

namespace vt::cuda {

void add_rms_norm(Stream& s, const Rows& residual, const Rows& delta, const Tensor& w, float eps,
                  RmsNormKind kind, const Rows& out);

}  // namespace vt::cuda
