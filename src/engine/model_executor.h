// ModelExecutor: what the engine loop needs from a model, and nothing more.
//
// The model runner (a model, its KV/state tensors, a device) implements it;
// the engine's tests implement it with a fake model. The engine never knows
// which model it drives.
#pragma once

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "engine/forward_batch.h"
#include "vt/ops/sampling.h"

namespace vtllm::engine {

class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;

  virtual int64_t vocab_size() const = 0;

  // Runs one step: writes the KV (and GDN state) of every token of `batch`
  // into the cache and returns the logits of batch.logits_indices, as
  // logits_indices.size() x vocab_size() floats, row-major.
  virtual std::vector<float> execute(const ForwardBatch& batch) = 0;

  // True when the executor can sample where its logits are (execute_sampled).
  virtual bool samples_on_device() const { return false; }
  // As execute(), then vt::sample of the logits rows with `sampling` (one row per
  // logits index): only the tokens and logprobs come back.
  virtual vt::SampleOutput execute_sampled(const ForwardBatch& batch,
                                           const vt::SampleBatch& sampling) {
    (void)batch, (void)sampling;
    VT_THROW("model executor: no device sampler (samples_on_device() is false)");
  }
};

}  // namespace vtllm::engine
