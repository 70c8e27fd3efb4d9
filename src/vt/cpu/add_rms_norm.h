// CPU arm of add_rms_norm (vt/ops/norm.h; internal to vt). Arguments arrive validated
// by vt/ops/norm.cpp as [rows, cols] views.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/norm.h"

namespace vt::cpu {

void add_rms_norm(Stream& s, const Rows& residual, const Rows& delta, const Tensor& w, float eps,
                  RmsNormKind kind, const Rows& out);

}  // namespace vt::cpu
