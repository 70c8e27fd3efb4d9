// SwiGluMlp: down_proj(silu(gate_proj x) * up_proj x), the dense MLP of Qwen3 / Qwen3.5.
// Weights under `prefix` ("model.layers.3.mlp."): gate_proj and up_proj [I, H],
// down_proj [H, I]; gate and up are stacked into one [2I, H] matrix (on the weights'
// device, in their dtype) at load so one GEMM feeds vt::silu_and_mul.
#pragma once

#include <string>

#include "models/layers/blocks.h"
#include "models/params.h"

namespace vtllm::models {

class SwiGluMlp final : public FeedForward {
 public:
  SwiGluMlp(int64_t hidden, int64_t intermediate, ParamSink& weights, const std::string& prefix);
  // out [T, hidden] in x's dtype, as every activation (must not overlap x).
  void forward(vt::Stream& s, const vt::Tensor& x, vt::Tensor& out) const override;

 private:
  int64_t intermediate_;
  vt::Tensor gate_up_, down_;
};

}  // namespace vtllm::models
