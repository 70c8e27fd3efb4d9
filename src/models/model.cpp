#include "models/model.h"

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "vt/ops/copy.h"

namespace vtllm::models {

vt::DType LoadConfig::default_dtype(vt::Device device) {
  return device.is_cpu() ? vt::DType::kF32 : vt::DType::kBF16;
}

ModelOptions ModelOptions::from_env() {
  ModelOptions o;
  if (const char* v = std::getenv("VTLLM_FUSE_ATTN_PREAMBLE")) {
    const std::string s(v);
    VT_CHECK(s == "0" || s == "1", "VTLLM_FUSE_ATTN_PREAMBLE=", s, ": expected 0 or 1");
    o.fuse_attn_preamble = s == "1";
  }
  return o;
}

void scatter_input_embeddings(vt::Stream& s, const InputEmbeddings& e, vt::Tensor& x) {
  const int64_t T = x.size(0), H = x.size(1), n = int64_t(e.rows.size());
  VT_CHECK(e.values.defined() && e.values.dim() == 2 && e.values.size(0) == n &&
               e.values.size(1) == H,
           "input embeddings: values ", e.values.defined() ? e.values.str() : "(none)",
           " are not [", n, ", ", H, "] for ", n, " rows");
  VT_CHECK(e.values.device() == x.device() && e.values.dtype() == x.dtype(),
           "input embeddings: values ", e.values.str(), " must be ", vt::dtype_name(x.dtype()),
           " on ", x.device().str());
  for (int64_t i = 0; i < n;) {
    const int32_t first = e.rows[size_t(i)];
    VT_CHECK(first >= 0 && first < T && (i == 0 || first > e.rows[size_t(i - 1)]),
             "input embeddings: row ", first, " (entry ", i, ") is not ascending within ", T,
             " tokens");
    int64_t j = i + 1;  // the run of consecutive rows starting at i
    while (j < n && e.rows[size_t(j)] == first + (j - i)) ++j;
    VT_CHECK(first + (j - i) <= T, "input embeddings: rows run past ", T, " tokens");
    vt::Tensor dst = x.slice(0, first, first + (j - i));
    vt::copy(s, e.values.slice(0, i, j), dst);
    i = j;
  }
}

BatchInputs Model::prepare(vt::Stream&, const ForwardBatch&, CacheView&, const StepLayout*,
                           const vt::Tensor*) {
  VT_THROW("model: this model does not take prepared inputs (no CUDA graphs)");
}
vt::Tensor Model::forward_prepared(vt::Stream&, const BatchInputs&, CacheView&,
                                   const InputEmbeddings*) {
  VT_THROW("model: this model does not take prepared inputs (no CUDA graphs)");
}
int64_t Model::packed_input_bytes(const StepLayout&) const {
  VT_THROW("model: this model does not take prepared inputs (no CUDA graphs)");
}

}  // namespace vtllm::models
