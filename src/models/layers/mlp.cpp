#include "models/layers/mlp.h"

#include "vt/ops/activation.h"
#include "vt/ops/copy.h"
#include "vt/ops/gemm.h"

namespace vtllm::models {

SwiGluMlp::SwiGluMlp(int64_t hidden, int64_t intermediate, WeightStore& w,
                     const std::string& prefix)
    : intermediate_(intermediate) {
  vt::Stream& s = w.stream();
  gate_up_ = vt::Tensor::empty({2 * intermediate, hidden}, vt::DType::kF32);
  vt::Tensor gate = gate_up_.slice(0, 0, intermediate);
  vt::Tensor up = gate_up_.slice(0, intermediate, 2 * intermediate);
  vt::copy(s, w.get(prefix + "gate_proj.weight", {intermediate, hidden}), gate);
  vt::copy(s, w.get(prefix + "up_proj.weight", {intermediate, hidden}), up);
  down_ = w.get(prefix + "down_proj.weight", {hidden, intermediate});
}

void SwiGluMlp::forward(vt::Stream& s, const vt::Tensor& x, vt::Tensor& out) const {
  const int64_t T = x.size(0);
  vt::Tensor gu = vt::Tensor::empty({T, 2 * intermediate_}, vt::DType::kF32);
  vt::Tensor h = vt::Tensor::empty({T, intermediate_}, vt::DType::kF32);
  vt::linear(s, x, gate_up_, gu);
  vt::silu_and_mul(s, gu, h);
  vt::linear(s, h, down_, out);
}

}  // namespace vtllm::models
