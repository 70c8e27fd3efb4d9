// CPU arm of vt/ops/copy.h (internal). Arguments are validated by the caller.
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cpu {
void copy(Stream& s, const Tensor& src, Tensor& dst);
}
