// CPU arms of vt/ops/gdn.h (internal): arguments arrive validated by vt/ops/gdn.cpp;
// these only compute.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/indices.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cpu {

void causal_conv1d_silu(Stream& s, const Tensor& x, const Tensor& w, const Varlen& req,
                        const Tensor& conv_state, const Tensor& out);
void gdn_gates(Stream& s, const Rows& a, const Rows& b, const Tensor& A_log, const Tensor& dt_bias,
               DType beta_round, const Tensor& g, const Tensor& beta);
void gated_delta_rule_recurrent(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& g, const Tensor& beta, float scale, const Varlen& req,
                                const Tensor& state, const Tensor& out);
void gated_delta_rule_chunked(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& g, const Tensor& beta, float scale, const Varlen& req,
                              const Tensor& state, const Tensor& out);
void gated_rms_norm(Stream& s, const Rows& x, const Rows& z, const Tensor& w, float eps,
                    const Rows& out);

}  // namespace vt::cpu
