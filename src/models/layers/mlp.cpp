#include "models/layers/mlp.h"

#include "base/error.h"
#include "vt/ops/activation.h"
#include "vt/ops/gemm.h"

namespace vtllm::models {

SwiGluMlp::SwiGluMlp(int64_t hidden, int64_t intermediate, ParamSink& w,
                     const std::string& prefix)
    : intermediate_(intermediate) {
  gate_up_ = w.take_stacked(
      {{prefix + "gate_proj.weight", intermediate}, {prefix + "up_proj.weight", intermediate}},
      hidden);
  down_ = w.take(prefix + "down_proj.weight", {hidden, intermediate});
}

void SwiGluMlp::forward(vt::Stream& s, const vt::Tensor& x, vt::Tensor& out) const {
  const int64_t T = x.size(0);
  vt::Tensor gu = vt::Tensor::empty({T, 2 * intermediate_}, x.dtype(), x.device());
  vt::Tensor h = vt::Tensor::empty({T, intermediate_}, x.dtype(), x.device());
  vt::linear(s, x, gate_up_, gu);
  vt::silu_and_mul(s, gu, h);
  vt::linear(s, h, down_, out);
}

}  // namespace vtllm::models
