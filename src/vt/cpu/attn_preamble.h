// CPU arm of attn_qk_norm_rope_gate (vt/ops/attn_preamble.h; internal): arguments
// arrive validated by vt/ops/attn_preamble.cpp. gate_out may be undefined (no gate).
#pragma once

#include "vt/ops/norm.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cpu {

void attn_qk_norm_rope_gate(Stream& s, const Tensor& qg, const Tensor& k, const Tensor& q_norm_w,
                            const Tensor& k_norm_w, float eps, RmsNormKind kind,
                            const Tensor& cos_sin, const Tensor& q_out, const Tensor& k_out,
                            const Tensor& gate_out);

}  // namespace vt::cpu
