// The op families' checks (internal to vt/check): each adds its results to h.
#pragma once

#include "vt/check/harness.h"

namespace vt::check {

void check_norms(Harness& h);
void check_activations(Harness& h);
void check_gemm(Harness& h);
void check_embedding(Harness& h);
void check_rope(Harness& h);
void check_argmax(Harness& h);
void check_gdn(Harness& h);

// "bf16[7, 129]"
std::string desc(const Tensor& t);

}  // namespace vt::check
