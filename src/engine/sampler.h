// Sampler: turns one row of logits per request into a token, vLLM V1 style.
//
// Per row, in order (vllm/v1/sample/sampler.py):
//   0. the request's constraint mask (SamplerRow::constraint_mask: vLLM's grammar
//      bitmask, which the model runner applies to the logits before the sampler);
//   1. raw logprobs, when the request asks for logprobs and the mode is kRaw;
//   2. allowed_token_ids (every other token masked), bad_words (each word whose other
//      tokens end the output: its last token masked), and stop tokens masked while the
//      request has fewer than min_tokens outputs;
//   3. logit_bias added;
//   4. repetition (prompt + output), frequency and presence (output) penalties;
//   5. greedy (temperature < 1e-5): argmax, lowest id on ties; otherwise
//      divide by temperature, min_p, top_k, top_p, then one draw from the
//      remaining distribution.
// Randomness: a seeded request draws from Philox keyed by its seed at counter
// (its number of output tokens), so it samples the same tokens whatever else
// is in the batch and after preemption. Unseeded rows take successive
// counters of an engine-level Philox stream keyed by the engine seed.
// Not thread-safe (the unseeded stream advances).
//
// The engine samples through device_batch() + results(), which wrap vt::sample
// (vt/ops/sampling.h): the pipeline runs where the logits are, on the CPU or on CUDA
// (where only token ids and logprobs cross to the host). sample() runs the same
// pipeline here in double precision on host logits: the reference the tests hold
// vt::sample to. device_batch() draws the rows' uniforms from the same Philox counters
// and advances the engine stream exactly as sample() would; tokens agree up to a
// uniform within float rounding of a CDF boundary.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/request.h"
#include "vt/ops/sampling.h"

namespace vtllm::engine {

enum class LogprobsMode {
  kRaw,        // log_softmax of the model's logits (vLLM's default, "raw_logprobs")
  kProcessed,  // log_softmax after every step above (the distribution actually sampled)
};

struct SamplerConfig {
  uint64_t seed = 0;  // the engine-level stream for unseeded requests
  LogprobsMode logprobs_mode = LogprobsMode::kRaw;
};

// One row of the batch: what the sampler needs to know about its request.
struct SamplerRow {
  const SamplingParams* params = nullptr;
  std::span<const int32_t> prompt_token_ids;
  std::span<const int32_t> output_token_ids;  // its size is the request-local step
  std::span<const int32_t> eos_token_ids;     // masked with stop_token_ids below min_tokens
  // A TokenConstraint's mask: vt::mask_words(V) words, bit set = allowed. sample()
  // applies it when non-empty; device_batch() gives each `constrained` row a mask row
  // (SampleRowParams::logits_mask), a copy of constraint_mask or zeros when it is empty,
  // for the caller to fill (mask_row()) before vt::sample.
  std::span<const uint32_t> constraint_mask = {};
  bool constrained = false;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

struct SampleResult {
  int32_t token = 0;
  // Filled when params->logprobs is set: the sampled token's logprob and rank
  // (the number of tokens whose logprob is >= its own, as vLLM counts), and the top-N
  // tokens by logprob (equal logprobs: lower id first).
  float logprob = 0;
  int64_t rank = 0;
  std::vector<TokenLogprob> top_logprobs;
};

class Sampler {
 public:
  explicit Sampler(const SamplerConfig& config = {});

  // logits: rows.size() x vocab_size floats, row-major. Throws when a row's
  // every token ends up masked or a token id is outside the vocabulary.
  std::vector<SampleResult> sample(std::span<const float> logits, int64_t vocab_size,
                                   std::span<const SamplerRow> rows);

  SampleResult sample_row(std::span<const float> logits, const SamplerRow& row);

  // The rows as vt::sample's batch: parameters, the uniforms (advancing the engine
  // stream for unseeded non-greedy rows, in row order), and per row the tokens that
  // min_tokens masks, logit_bias shifts or the penalties touch (prompt and output
  // counted once each), bad_words' banned tokens as masked edits; allowed_token_ids as a
  // token_mask row, constrained rows' masks as logits_mask rows. vocab_size bounds the
  // token ids (checked).
  vt::SampleBatch device_batch(std::span<const SamplerRow> rows, int64_t vocab_size);
  // The words of mask row k of b (mask_words(vocab_size) of them), to fill in place.
  static std::span<uint32_t> mask_row(vt::SampleBatch& b, int32_t k, int64_t vocab_size);
  // vt::sample's output as SampleResults (logprobs filled where the row asked).
  static std::vector<SampleResult> results(const vt::SampleOutput& out,
                                           std::span<const SamplerRow> rows);

  const SamplerConfig& config() const { return config_; }

 private:
  double next_uniform(const SamplerRow& row);

  SamplerConfig config_;
  uint64_t unseeded_draws_ = 0;
  std::vector<int32_t> edit_of_;  // device_batch's token -> edit index, -1 when untouched
};

// The logits after steps 0 and 2-5 up to (not including) the draw, for inspection
// and for the processed-logprobs mode. Greedy rows stop after step 4.
std::vector<float> processed_logits(std::span<const float> logits, const SamplerRow& row);

}  // namespace vtllm::engine
