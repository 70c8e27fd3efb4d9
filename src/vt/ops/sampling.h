// Sampling primitives.
//
// argmax(s, logits, out): out[t] = the index of the largest logits[t, :].
//   logits [T, V] in {f32, bf16, f16}, last dim stride 1; out [T] in {i32, i64}.
//   Ties go to the lowest index and NaN counts as the largest value (as torch.argmax).
// Backends: CPU and CUDA (each row split over blocks, then one warp per row picks the
// winner).
//
// sample(s, logits, batch) -> SampleOutput: one token per logits row with vLLM V1's
//   per-row pipeline (the engine's Sampler, engine/sampler.h, is the reference):
//     0. the row's vocabulary masks (SampleRowParams::logits_mask, token_mask): -inf
//        where the token's bit is 0. logits_mask is applied to the raw logits, so raw
//        logprobs see it (vLLM's grammar bitmask, applied before its sampler);
//        token_mask only to the row that is sampled (vLLM's allowed_token_ids);
//     1. each touched token of the row (SampleBatch::edits): -inf if masked (stop
//        tokens below min_tokens), + its logit_bias values in order, the repetition
//        penalty (seen in prompt or output; positive / r, else * r; only when r != 1),
//        - (frequency * count + presence) when count > 0 (only when either is != 0);
//     2. greedy (temperature < 1e-5): argmax, lowest id on ties; otherwise
//        x / temperature, min_p (x < max + log_min_p -> -inf), top_k (x < the k-th
//        largest -> -inf: ties at the k-th value all stay), top_p (order by logit
//        descending, equal logits lower id first; a token stays when it is first or
//        the probability mass before it is < p), then the inverse-CDF draw over ids in
//        ascending order at `uniform` (the first id whose cumulative mass exceeds
//        uniform * total);
//     3. rows with logprobs >= 0: log_softmax of the raw logits after logits_mask (or, with
//        processed_logprobs, of the row after step 2's filters; greedy rows: after step
//        1) in double accumulation: the sampled token's logprob, its rank (tokens whose
//        logprob is >= its own) and the top-N (logprob descending, lower id first).
//   Masses for min_p/top_p/the draw are exp(x - max) in float with the rounding error
//   of x - max folded back in, summed as 2^-40 fixed point (exact, order-free
//   integers: the result does not depend on thread count or batch composition). The
//   token can differ from the engine's double-precision Sampler only when the uniform
//   (or a top_p boundary) lies within float rounding (~1e-7 relative) of a CDF boundary.
//   logits [R, V] in {f32, bf16, f16} on the stream's device, last dim stride 1,
//   V < 2^23. The batch lives on the host and is validated here (sizes, token ids in
//   [0, V), distinct within a row, parameter ranges, mask indices); logprobs <=
//   kMaxDeviceLogprobs. Masks cross to the device with the rest of the batch in one copy;
//   a batch without masks copies none.
//   The call waits for the stream (the result is on the host). Throws when a
//   non-greedy row (or a row asking for logprobs) has every token masked.
//   NaN logits: undefined.
// Backends: CPU and CUDA (one block per row; top_k/top_p by radix select on the
// float bits, no sort).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

void argmax(Stream& s, const Tensor& logits, Tensor& out);

inline constexpr int32_t kMaxDeviceLogprobs = 256;
inline constexpr float kGreedyTemperature = 1e-5f;  // below it a row is greedy

struct SampleRowParams {
  float temperature = 1.0f;
  float log_min_p = -std::numeric_limits<float>::infinity();  // std::log(min_p); -inf: off
  int32_t top_k = 0;                    // <= 0 or >= V: off
  float top_p = 1.0f;                   // (0, 1]; 1: off
  float repetition = 1.0f, frequency = 0.0f, presence = 0.0f;
  double uniform = 0;    // [0, 1): the draw (unused by greedy rows)
  int32_t logprobs = -1; // < 0: none; else the top-N asked for (N may be 0)
  // Mask rows of SampleBatch::bitmask (-1: none); see step 0. Rows may share one.
  int32_t logits_mask = -1, token_mask = -1;
};

// Words of one vocabulary mask row: ceil(vocab / 32).
inline constexpr int64_t mask_words(int64_t vocab) { return (vocab + 31) / 32; }

// Whether token t is allowed by the mask row starting at `words`.
inline bool mask_allows(const uint32_t* words, int64_t t) {
  return (words[t >> 5] >> (t & 31)) & 1u;
}

// A token that step 1 touches in one row; each token at most once per row.
struct SampleTokenEdit {
  int32_t token = 0;
  int32_t output_count = 0;  // occurrences in the output (frequency, presence, repetition)
  bool in_prompt = false;    // repetition penalty applies even with output_count 0
  bool masked = false;
  int32_t bias_begin = 0, bias_end = 0;  // SampleBatch::bias values added in order
};

struct SampleBatch {
  std::vector<SampleRowParams> rows;
  std::vector<int64_t> edit_start;  // [rows + 1]: row r owns edits [edit_start[r], edit_start[r+1])
  std::vector<SampleTokenEdit> edits;
  std::vector<float> bias;
  // Mask rows of mask_words(V) words each, row k at [k * W, (k + 1) * W): bit t % 32 of
  // word t / 32 set = token t allowed; bits past V are ignored.
  std::vector<uint32_t> bitmask;
  bool processed_logprobs = false;
};

struct SampleOutput {
  std::vector<int32_t> token;  // [rows]
  // Rows with logprobs >= 0 (others: 0): the sampled token's logprob and rank, and its
  // top-N in top_token/top_logprob[top_start[r], top_start[r+1]).
  std::vector<float> logprob;
  std::vector<int64_t> rank;
  std::vector<int64_t> top_start;  // [rows + 1]
  std::vector<int32_t> top_token;
  std::vector<float> top_logprob;
};

SampleOutput sample(Stream& s, const Tensor& logits, const SampleBatch& batch);

}  // namespace vt
