#include "engine/model_executor.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"

namespace vtllm::engine {

int64_t ModelExecutor::check_multimodal() const {
  VT_THROW("this model has no vision encoder: images and videos are refused");
}

vt::SampleOutput empty_sample_output() {
  vt::SampleOutput none;
  none.top_start.push_back(0);
  return none;
}

std::vector<SampleResult> prompt_logprobs_from_logits(std::span<const float> logits, int64_t vocab,
                                                      std::span<const PromptLogprobRow> rows) {
  VT_CHECK(int64_t(logits.size()) == int64_t(rows.size()) * vocab,
           "prompt logprobs: ", logits.size(), " logits for ", rows.size(), " rows of ", vocab);
  std::vector<SampleResult> out(rows.size());
  std::vector<int32_t> order;
  for (size_t k = 0; k < rows.size(); ++k) {
    const PromptLogprobRow& row = rows[k];
    VT_CHECK(row.target >= 0 && row.target < vocab, "prompt logprobs: target token ", row.target,
             " outside the vocabulary [0, ", vocab, ")");
    const std::span<const float> x = logits.subspan(k * size_t(vocab), size_t(vocab));
    double m = -INFINITY;
    for (float v : x) m = std::max(m, double(v));
    double sum = 0;
    for (float v : x) sum += std::exp(double(v) - m);
    const double lse = m + std::log(sum);
    SampleResult& r = out[k];
    r.token = row.target;
    r.logprob = float(double(x[row.target]) - lse);
    r.rank = std::count_if(x.begin(), x.end(), [&](float v) { return v >= x[row.target]; });
    const int64_t n = std::min<int64_t>(row.top_n, vocab);
    if (n <= 0) continue;
    order.resize(size_t(vocab));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + n, order.end(),
                      [&](int32_t a, int32_t b) { return x[a] != x[b] ? x[a] > x[b] : a < b; });
    for (int64_t i = 0; i < n; ++i)
      r.top_logprobs.push_back({order[i], float(double(x[order[i]]) - lse)});
  }
  return out;
}

StepOutput HostLogitsExecutor::execute(const StepPlan& plan, StepSampling& sampling) {
  VT_CHECK(plan.prompt_logprob_rows.empty(),
           "model executor: this executor computes no prompt logprobs (",
           plan.prompt_logprob_rows.size(), " rows asked)");
  std::vector<float> values = logits(plan);
  if (sampling.ready) sampling.ready();
  const int64_t rows = int64_t(plan.logits_indices.size()), vocab = vocab_size();
  VT_CHECK(int64_t(values.size()) == rows * vocab, "model executor: ", values.size(),
           " logits for ", rows, " rows of ", vocab);
  if (rows == 0) {
    VT_CHECK(sampling.batch.rows.empty(), "model executor: ", sampling.batch.rows.size(),
             " rows to sample and no logits");
    return {empty_sample_output(), {}};
  }
  if (!stream_) stream_ = std::make_unique<vt::Stream>(vt::Device::cpu(), 1);
  const vt::Tensor t = vt::Tensor::from_blob(values.data(), {rows, vocab}, vt::DType::kF32,
                                             vt::Device::cpu(), nullptr);
  return {vt::sample(*stream_, t, sampling.batch), {}};
}

}  // namespace vtllm::engine
