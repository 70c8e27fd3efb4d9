#include "models/layers/mlp.h"

#include "base/error.h"
#include "vt/ops/activation.h"
#include "vt/ops/copy.h"
#include "vt/ops/gemm.h"

namespace vtllm::models {

SwiGluMlp::SwiGluMlp(int64_t hidden, int64_t intermediate, WeightStore& w,
                     const std::string& prefix)
    : intermediate_(intermediate) {
  vt::Stream& s = w.stream();
  const vt::Tensor gate = w.take(prefix + "gate_proj.weight", {intermediate, hidden});
  const vt::Tensor up = w.take(prefix + "up_proj.weight", {intermediate, hidden});
  VT_CHECK(gate.dtype() == up.dtype(), prefix, "gate_proj is ", gate.str(), " but up_proj ",
           up.str());
  // Stacked on the weights' device in their dtype; the originals are freed on return.
  gate_up_ = vt::Tensor::empty({2 * intermediate, hidden}, gate.dtype(), w.device());
  vt::Tensor gate_rows = gate_up_.slice(0, 0, intermediate);
  vt::Tensor up_rows = gate_up_.slice(0, intermediate, 2 * intermediate);
  vt::copy(s, gate, gate_rows);
  vt::copy(s, up, up_rows);
  s.synchronize();  // the copies read `gate` and `up`, which die next
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
