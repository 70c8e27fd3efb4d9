// ModelExecutor: what the engine loop needs from a model, and nothing more.
//
// The model runner (a model, its KV/state tensors, a device) implements it;
// the engine's tests implement it with a fake model. The engine never knows
// which model it drives.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/forward_batch.h"

namespace vtllm::engine {

class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;

  virtual int64_t vocab_size() const = 0;

  // Runs one step: writes the KV (and GDN state) of every token of `batch`
  // into the cache and returns the logits of batch.logits_indices, as
  // logits_indices.size() x vocab_size() floats, row-major.
  virtual std::vector<float> execute(const ForwardBatch& batch) = 0;
};

}  // namespace vtllm::engine
