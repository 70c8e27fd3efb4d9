// SparseMoeBlock: the Qwen3.5-MoE feed-forward of every layer (qwen3_5.md §9.2).
//
//   (ids, w) = vt::moe_router(x, router, k)   logits = x . router^T, softmax over all E,
//                                             top-k, renormalised (one op: fused on CUDA)
//   routed = vt::moe_experts(x, experts.gate_up_proj, experts.down_proj, ids, w)
//   shared = SwiGLU_shared(x) * sigmoid(x . shared_expert_gate^T)
//   out    = routed + shared
// In a narrow activation dtype every step rounds where the oracle's does: the router
// logits, the routing weights, each expert's products, the k-sum once, the sigmoid gate,
// the gated shared output and the final sum.
// Weights under `prefix` ("model.layers.3.mlp."): gate.weight [E, H],
// experts.gate_up_proj [E, 2I, H] (gate rows first), experts.down_proj [E, H, I],
// shared_expert.{gate,up}_proj.weight [Is, H], shared_expert.down_proj.weight [H, Is],
// shared_expert_gate.weight [1, H]. The shared expert's gate and up are stacked into one
// [1, 2Is, H] expert at load: it runs as a one-expert vt::moe_experts whose routing
// weight is the sigmoid gate, which is exactly §9.1's SwiGLU followed by the gate product.
#pragma once

#include <string>

#include "io/config.h"
#include "models/layers/blocks.h"
#include "models/params.h"

namespace vtllm::models {

class SparseMoeBlock final : public FeedForward {
 public:
  SparseMoeBlock(int64_t hidden, const io::MoeConfig& moe, ParamSink& weights,
                 const std::string& prefix);
  // out [T, hidden] in x's dtype, as every activation (must not overlap x).
  void forward(vt::Stream& s, const vt::Tensor& x, vt::Tensor& out) const override;

 private:
  int64_t hidden_, experts_, top_k_;
  vt::Tensor router_, gate_up_, down_;
  vt::Tensor shared_gate_up_, shared_down_, shared_gate_;  // [1, 2Is, H], [1, H, Is], [1, H]
};

}  // namespace vtllm::models
