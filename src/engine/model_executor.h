// ModelExecutor: what the engine loop needs from a model, and nothing more.
//
// The model runner (a model, its KV/state tensors, a device) implements it; the
// engine's tests implement it with a fake model through HostLogitsExecutor. The
// engine never knows which model it drives. Every executor samples through vt::sample
// (one sampling path for CPU and CUDA; engine::Sampler is its host reference).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/step_plan.h"
#include "vt/ops/sampling.h"
#include "vt/stream.h"

namespace vtllm::engine {

class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;

  virtual int64_t vocab_size() const = 0;

  // Runs one step: writes the KV (and GDN state) of every token of `plan` into the
  // cache, then samples the logits row of each plan.logits_indices entry with the
  // matching row of `sampling` (vt::sample, where the logits are): only the tokens
  // and logprobs come back. A plan without logits rows returns an empty output.
  virtual vt::SampleOutput execute(const StepPlan& plan, const vt::SampleBatch& sampling) = 0;
};

// An executor whose model computes its logits on the host (rows x vocab floats,
// row-major): execute() samples them with vt::sample on a one-thread CPU stream.
class HostLogitsExecutor : public ModelExecutor {
 public:
  // The logits of plan.logits_indices, after writing the step's cache entries.
  virtual std::vector<float> logits(const StepPlan& plan) = 0;
  vt::SampleOutput execute(const StepPlan& plan, const vt::SampleBatch& sampling) final;

 private:
  std::unique_ptr<vt::Stream> stream_;
};

// vt::sample's output for a step without logits rows.
vt::SampleOutput empty_sample_output();

}  // namespace vtllm::engine
