// ModelExecutor: what the engine loop needs from a model, and nothing more.
//
// The model runner (a model, its KV/state tensors, a device) implements it; the
// engine's tests implement it with a fake model through HostLogitsExecutor. The
// engine never knows which model it drives. Every executor samples through vt::sample
// (one sampling path for CPU and CUDA; engine::Sampler is its host reference).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/sampler.h"
#include "engine/step_plan.h"
#include "vt/ops/sampling.h"
#include "vt/stream.h"

namespace vtllm::engine {

// What one step gives back: the samples of plan.logits_indices (vt::sample's output)
// and, for each plan.prompt_logprob_rows entry in order, its prompt logprob (token: the
// row's target; logprob, rank and top_logprobs as a sampled token's raw logprobs).
struct StepOutput {
  vt::SampleOutput samples;
  std::vector<SampleResult> prompt_logprobs;
};

// What a step samples with: the batch, and `ready`, which (when set) the executor calls
// once after the step's forward pass is issued and before vt::sample reads the batch:
// it waits for the rows' constraint masks (computed meanwhile on the engine's mask
// worker, into batch.bitmask), so mask work overlaps the forward pass.
struct StepSampling {
  vt::SampleBatch batch;
  std::function<void()> ready;
};

class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;

  virtual int64_t vocab_size() const = 0;

  // Runs one step: writes the KV (and GDN state) of every token of `plan` into the
  // cache, then samples the logits row of each plan.logits_indices entry with the
  // matching row of sampling.batch (vt::sample, where the logits are; sampling.ready
  // first): only the tokens and logprobs come back. A plan without logits rows gives
  // empty samples. The prompt logprobs of plan.prompt_logprob_rows come back too.
  virtual StepOutput execute(const StepPlan& plan, StepSampling& sampling) = 0;

  // Multimodal requests (plans with encoder work and MRoPE positions): returns the
  // vision tower's merge size, or throws naming why this executor cannot run them (no
  // vision tower, MRoPE refused). The default has no tower.
  virtual int64_t check_multimodal() const;
  // Bytes of one feature row in the encoder cache (out_hidden x dtype size); 0 without a
  // tower.
  virtual int64_t encoder_bytes_per_token() const { return 0; }
};

// An executor whose model computes its logits on the host (rows x vocab floats,
// row-major): execute() samples them with vt::sample on a one-thread CPU stream. It
// computes no prompt logprobs: a plan with prompt_logprob_rows is refused.
class HostLogitsExecutor : public ModelExecutor {
 public:
  // The logits of plan.logits_indices, after writing the step's cache entries.
  virtual std::vector<float> logits(const StepPlan& plan) = 0;
  StepOutput execute(const StepPlan& plan, StepSampling& sampling) final;

 private:
  std::unique_ptr<vt::Stream> stream_;
};

// vt::sample's output for a step without logits rows.
vt::SampleOutput empty_sample_output();

// The prompt logprobs of `rows` from their f32 logits (rows.size() x vocab, row-major,
// row k for rows[k]), in double: log_softmax(row)[target] rounded to float, its rank
// (the number of tokens whose logit is >= the target's, as vLLM counts) and the top_n
// tokens by logit (equal logits: lower id first). Throws on a target outside the vocab.
std::vector<SampleResult> prompt_logprobs_from_logits(std::span<const float> logits, int64_t vocab,
                                                      std::span<const PromptLogprobRow> rows);

}  // namespace vtllm::engine
