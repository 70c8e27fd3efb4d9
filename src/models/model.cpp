#include "models/model.h"

#include <cstdlib>
#include <string>

#include "base/error.h"

namespace vtllm::models {

vt::DType LoadConfig::default_dtype(vt::Device device) {
  return device.is_cpu() ? vt::DType::kF32 : vt::DType::kBF16;
}

ModelOptions ModelOptions::from_env() {
  ModelOptions o;
  if (const char* v = std::getenv("VT_FUSE_ATTN_PREAMBLE")) {
    const std::string s(v);
    VT_CHECK(s == "0" || s == "1", "VT_FUSE_ATTN_PREAMBLE=", s, ": expected 0 or 1");
    o.fuse_attn_preamble = s == "1";
  }
  return o;
}

BatchInputs Model::prepare(vt::Stream&, const ForwardBatch&, CacheView&, const StepLayout*,
                           const vt::Tensor*) {
  VT_THROW("model: this model does not take prepared inputs (no CUDA graphs)");
}
vt::Tensor Model::forward_prepared(vt::Stream&, const BatchInputs&, CacheView&) {
  VT_THROW("model: this model does not take prepared inputs (no CUDA graphs)");
}
int64_t Model::packed_input_bytes(const StepLayout&) const {
  VT_THROW("model: this model does not take prepared inputs (no CUDA graphs)");
}

}  // namespace vtllm::models
