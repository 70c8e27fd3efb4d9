#include "engine/model_executor.h"

#include "base/error.h"

namespace vtllm::engine {

vt::SampleOutput empty_sample_output() {
  vt::SampleOutput none;
  none.top_start.push_back(0);
  return none;
}

vt::SampleOutput HostLogitsExecutor::execute(const StepPlan& plan,
                                             const vt::SampleBatch& sampling) {
  std::vector<float> values = logits(plan);
  const int64_t rows = int64_t(plan.logits_indices.size()), vocab = vocab_size();
  VT_CHECK(int64_t(values.size()) == rows * vocab, "model executor: ", values.size(),
           " logits for ", rows, " rows of ", vocab);
  if (rows == 0) {
    VT_CHECK(sampling.rows.empty(), "model executor: ", sampling.rows.size(),
             " rows to sample and no logits");
    return empty_sample_output();
  }
  if (!stream_) stream_ = std::make_unique<vt::Stream>(vt::Device::cpu(), 1);
  const vt::Tensor t = vt::Tensor::from_blob(values.data(), {rows, vocab}, vt::DType::kF32,
                                             vt::Device::cpu(), nullptr);
  return vt::sample(*stream_, t, sampling);
}

}  // namespace vtllm::engine
