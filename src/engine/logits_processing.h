// The per-row logits transforms the Sampler applies, one function per step,
// each on one row of V float logits, in place. They follow vLLM V1's
// definitions (vllm/v1/sample): a masked token gets -infinity.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace vtllm::engine {

// Repetition penalty on every token seen in prompt or output (positive logits
// divided by it, others multiplied), then frequency_penalty * count and
// presence_penalty * [count > 0] subtracted over output tokens only.
void apply_penalties(std::span<float> logits, std::span<const int32_t> prompt,
                     std::span<const int32_t> output, float repetition, float frequency,
                     float presence);

void apply_logit_bias(std::span<float> logits,
                      std::span<const std::pair<int32_t, float>> bias);

// Sets the given tokens to -infinity (stop tokens while below min_tokens).
void mask_tokens(std::span<float> logits, std::span<const int32_t> tokens);

// Keeps only the given tokens (allowed_token_ids): every other token gets -infinity.
void keep_only(std::span<float> logits, std::span<const int32_t> allowed);

// Sets every token whose bit is clear in `words` (bit t % 32 of word t / 32, at least
// ceil(V / 32) words) to -infinity.
void apply_bitmask(std::span<float> logits, std::span<const uint32_t> words);

// The tokens bad_words bans after `output` (vLLM's apply_bad_words): each word's last
// token when the output ends with the word's other tokens; a one-token word always.
// In word order, with repeats.
std::vector<int32_t> bad_word_tokens(std::span<const std::vector<int32_t>> words,
                                     std::span<const int32_t> output);

// Keeps tokens whose probability is at least min_p times the largest one.
void apply_min_p(std::span<float> logits, float min_p);

// Keeps every token whose logit is >= the k-th largest (ties at the boundary
// are all kept, as vLLM does). k <= 0 or k >= V: no-op.
void apply_top_k(std::span<float> logits, int k);

// Sorts ascending (equal logits: higher id first) and removes the tokens whose
// cumulative probability from the bottom is <= 1 - p; the most likely token
// always stays. p >= 1: no-op.
void apply_top_p(std::span<float> logits, float p);

// Lowest id among the largest logits.
int32_t argmax(std::span<const float> logits);

// log_softmax in double accumulation; -infinity stays -infinity.
std::vector<float> log_softmax(std::span<const float> logits);

// Draws from softmax(logits) by inverse CDF over token ids in order, with
// `u` uniform in [0, 1). Deterministic given (logits, u).
int32_t sample_from_logits(std::span<const float> logits, double u);

}  // namespace vtllm::engine
