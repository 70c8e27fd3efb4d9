// CUDA arms of vt/ops/norm.h and of gated_rms_norm (vt/ops/gdn.h); no CUDA headers.
// Arguments arrive validated, as [rows, cols] views. Defined in cuda/norm/.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/norm.h"

namespace vt::cuda {

void rms_norm(Stream& s, const Rows& x, const Tensor& w, float eps, RmsNormKind kind, const Rows& out);
void l2_normalize(Stream& s, const Rows& x, float eps, const Rows& out);
void gated_rms_norm(Stream& s, const Rows& x, const Rows& z, const Tensor& w, float eps,
                    const Rows& out);

}  // namespace vt::cuda
