// GatedDeltaNet: the linear-attention layer of Qwen3.5 (qwen3_5.md §8).
//
// x [T, hidden] -> in_proj_qkv (q ‖ k ‖ v channels), in_proj_z, in_proj_b, in_proj_a as
// one linear over the four weights stacked at load (their outputs are column slices of
// one [T, conv_dim + Hv*Dv + 2 Hv] result, each element rounded once as before);
// causal depthwise conv (kernel K) + SiLU over the qkv channels with the conv state;
// q and k l2-normalised (eps 1e-6, one launch over all 2 Hk heads), q scaled by
// Dk^-0.5; beta = sigmoid(b) (rounded to the activation dtype, §8.4),
// g = -exp(A_log) softplus(a + dt_bias); the gated delta rule (per-token recurrence when
// every request is a one-token decode step, as the oracle; chunks of 64 otherwise);
// gated RMSNorm with silu(z) per value head; out_proj. A decode step runs everything
// from the l2norm to the gated norm as one op (vt::gdn_fused_recurrent; same values).
// Weights under `prefix` ("model.layers.0.linear_attn."): in_proj_qkv [conv_dim, H],
// in_proj_z [Hv*Dv, H], in_proj_b and in_proj_a [Hv, H] (one dtype; freed once stacked),
// conv1d.weight [conv_dim, 1, K], A_log and dt_bias [Hv], norm.weight [Dv],
// out_proj [H, Hv*Dv].
// A request with context_lens == 0 starts from a zeroed state slot.
#pragma once

#include <string>

#include "io/config.h"
#include "models/cache.h"
#include "models/layers/batch_inputs.h"
#include "models/layers/blocks.h"
#include "models/params.h"

namespace vtllm::models {

class GatedDeltaNet final : public Mixer {
 public:
  GatedDeltaNet(const io::LinearAttentionConfig& dims, int64_t hidden, float eps,
                ParamSink& weights, const std::string& prefix);

  // x [T, hidden] on the weights' device; activations in x's dtype (see forward()).
  // out [T, hidden] in that dtype (must not overlap x). cache.gdn(layer) holds its state;
  // slots of requests that start a sequence are zeroed first (in.new_state_slots).
  void forward(vt::Stream& s, const vt::Tensor& x, const BatchInputs& in, CacheView& cache,
               int64_t layer, vt::Tensor& out) const override;
  LayerCacheSpec cache_spec() const override;

 private:
  // Rows of the stacked input projection: conv_dim + Hv*Dv + 2 Hv.
  int64_t in_proj_rows() const { return d_.conv_dim() + d_.value_dim() + 2 * d_.num_value_heads; }

  io::LinearAttentionConfig d_;
  int64_t hidden_;
  float eps_;
  // in_proj_qkv ‖ in_proj_z ‖ in_proj_b ‖ in_proj_a, stacked by rows: [in_proj_rows(), H].
  vt::Tensor in_proj_, conv_w_, a_log_, dt_bias_, norm_, out_proj_;
};

}  // namespace vtllm::models
