#include "models/layers/moe.h"

#include "vt/ops/moe.h"
#include "vt/profile.h"

namespace vtllm::models {

SparseMoeBlock::SparseMoeBlock(int64_t hidden, const io::MoeConfig& moe, ParamSink& w,
                               const std::string& prefix)
    : hidden_(hidden), experts_(moe.num_experts), top_k_(moe.num_experts_per_tok) {
  const int64_t I = moe.moe_intermediate_size, Is = moe.shared_expert_intermediate_size;
  router_ = w.take(prefix + "gate.weight", {experts_, hidden});
  gate_up_ = w.take(prefix + "experts.gate_up_proj", {experts_, 2 * I, hidden});
  down_ = w.take(prefix + "experts.down_proj", {experts_, hidden, I});
  const std::string sp = prefix + "shared_expert.";
  shared_gate_up_ =
      w.take_stacked({{sp + "gate_proj.weight", Is}, {sp + "up_proj.weight", Is}}, hidden);
  shared_down_ = w.take(sp + "down_proj.weight", {hidden, Is});
  shared_gate_ = w.take(prefix + "shared_expert_gate.weight", {1, hidden});
  if (!w.declaring()) {
    shared_gate_up_ = shared_gate_up_.view({1, 2 * Is, hidden});
    shared_down_ = shared_down_.view({1, hidden, Is});
  }
}

void SparseMoeBlock::forward(vt::Stream& s, const vt::Tensor& x, vt::Tensor& out) const {
  const int64_t T = x.size(0);
  if (T == 0) return;
  const vt::DType dt = x.dtype();
  const vt::Device dev = x.device();
  vt::Tensor logits = vt::Tensor::empty({T, experts_}, dt, dev);
  vt::Tensor ids = vt::Tensor::empty({T, top_k_}, vt::DType::kI32, dev);
  vt::Tensor weights = vt::Tensor::empty({T, top_k_}, dt, dev);
  vt::moe_router(s, x, router_, top_k_, logits, ids, weights);
  if (vt::Profiler* p = vt::Profiler::of(s)) p->note_routing(s, ids, experts_);  // count_experts
  vt::moe_experts_shared(s, x, gate_up_, down_, ids, weights, shared_gate_up_, shared_down_,
                         shared_gate_, out);
}

}  // namespace vtllm::models
