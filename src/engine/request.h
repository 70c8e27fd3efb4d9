// Request: one generation request as the scheduler sees it, and its SamplingParams.
//
// A Request is a plain record owned by the Scheduler. Its lifecycle:
//   kWaiting -> kRunning -> (kPreempted -> kWaiting ... ->) finished
// where finished is kFinishedStopped (eos, stop token or stop string),
// kFinishedLength (max_tokens or max_model_len), kFinishedAborted or kFinishedError
// (its TokenConstraint rejected a token or gave no allowed token).
// A preempted request loses its cache and recomputes prompt + output so far.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/block_hash.h"
#include "engine/token_constraint.h"
#include "multimodal/prompt_expansion.h"

namespace vtllm::engine {

enum class RequestStatus {
  kWaiting,
  kRunning,
  kPreempted,
  kFinishedStopped,
  kFinishedLength,
  kFinishedAborted,
  kFinishedError
};

enum class FinishReason { kNone, kStop, kLength, kAbort, kError };

const char* to_string(RequestStatus s);
const char* to_string(FinishReason r);
bool is_finished(RequestStatus s);
FinishReason finish_reason_of(RequestStatus s);

// Per-request sampling and stopping parameters, with vLLM's meaning and defaults.
struct SamplingParams {
  int n = 1;                        // parallel samples; expanded into n child requests
  float temperature = 1.0f;         // < kGreedyEpsilon means greedy
  float top_p = 1.0f;               // (0, 1]
  int top_k = 0;                    // 0 or -1: disabled
  float min_p = 0.0f;               // [0, 1]
  float repetition_penalty = 1.0f;  // > 0; prompt and output tokens
  float frequency_penalty = 0.0f;   // [-2, 2]; output tokens
  float presence_penalty = 0.0f;    // [-2, 2]; output tokens
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> added bias
  std::optional<uint64_t> seed;     // per-request generator (batch-independent)
  int64_t max_tokens = 16;          // >= 1
  int64_t min_tokens = 0;           // stop tokens are masked until this many outputs
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  // vLLM's allowed_token_ids: only these ids may be sampled (set: non-empty, in vocab).
  std::optional<std::vector<int32_t>> allowed_token_ids;
  // vLLM's bad_words: a word's last token is masked whenever the output ends with the
  // word's other tokens (a one-token word: always). The engines tokenize `bad_words`
  // into bad_words_token_ids at add_request (resolve_bad_words) unless ids are given;
  // each word of ids non-empty and in the vocabulary.
  std::vector<std::string> bad_words;
  std::vector<std::vector<int32_t>> bad_words_token_ids;
  // Makes each sample's TokenConstraint (null: unconstrained). Not checked by validate().
  ConstraintFactory constraint;
  std::vector<std::string> stop;    // stop strings, matched on detokenized output
  bool include_stop_str_in_output = false;
  std::optional<int> logprobs;      // top-N raw logprobs per output token
  // vLLM's prompt_logprobs: for every prompt token after the first, its raw logprob given
  // the tokens before it, its rank and the top-N of that distribution. A request that
  // asks skips the prefix cache (vLLM does), so every prompt position is computed.
  std::optional<int> prompt_logprobs;
  bool skip_special_tokens = true;  // the detokenized text leaves out special tokens

  static constexpr float kGreedyEpsilon = 1e-5f;
  bool greedy() const { return temperature < kGreedyEpsilon; }

  // Throws vtllm::Error naming the first bad field ("sampling params: top_p = 1.5, expected (0, 1]").
  // vocab_size bounds the token ids in logit_bias and stop_token_ids.
  void validate(int64_t vocab_size) const;
};

// One vision item of a prompt: its processed input (immutable, shared by every request
// that carries it) and where its placeholder rows are in the expanded prompt.
struct MultimodalItem {
  std::shared_ptr<const multimodal::VisionInput> input;
  multimodal::ItemPlacement placement;
  // The encoder cache's key and the prefix cache's extra key (VisionInput::hash).
  BlockHash hash() const { return {input->hash[0], input->hash[1]}; }
};

// The multimodal part of an expanded prompt of P tokens: its items in order of
// appearance, and its MRoPE positions [3, P] row-major with δ (qwen3_5.md §16): token
// i >= P (generated) has position i + δ on all three axes.
struct MultimodalPrompt {
  std::vector<MultimodalItem> items;
  std::vector<int64_t> mrope_positions;
  int64_t mrope_delta = 0;
};

// The MultimodalPrompt of `expanded` (expand_prompt's output for `inputs`, in the same
// order): the items sorted by position and the positions of compute_mrope_positions.
std::shared_ptr<const MultimodalPrompt> make_multimodal_prompt(
    const multimodal::ExpandedPrompt& expanded,
    const std::vector<std::shared_ptr<const multimodal::VisionInput>>& inputs,
    multimodal::PlaceholderIds pads, int64_t merge_size);

struct Request {
  Request(std::string id, std::vector<int32_t> prompt_token_ids, SamplingParams params,
          int priority = 0);

  std::string id;
  std::vector<int32_t> prompt_token_ids;
  std::vector<int32_t> output_token_ids;
  std::vector<int32_t> all_token_ids;  // prompt followed by output
  SamplingParams params;
  std::vector<int32_t> eos_token_ids;  // from config / generation_config.json
  std::vector<ExtraKeySpan> extra_keys;
  std::optional<BlockHash> cache_salt;  // mixed into the first block's hash
  // What it may generate next (made by params.constraint); null: unconstrained.
  std::shared_ptr<TokenConstraint> constraint;
  // Vision items and MRoPE positions of the prompt; null for a text-only request. The
  // engine sets extra_keys from it (each item's hash over its span).
  std::shared_ptr<const MultimodalPrompt> mm;

  int priority = 0;           // lower value runs first under the priority policy
  uint64_t arrival_seq = 0;   // set by the scheduler; FCFS order and tie-break
  RequestStatus status = RequestStatus::kWaiting;
  int64_t num_computed_tokens = 0;
  int64_t num_cached_tokens = -1;  // prefix-cache hit at first scheduling; -1 until then
  int num_preemptions = 0;
  // When the scheduler first admitted it (queue time ends, prefill begins); unset until then.
  std::optional<std::chrono::steady_clock::time_point> first_scheduled;
  std::optional<int32_t> stop_token;  // the stop token id that finished it, if any
  std::string stop_string;            // the stop string that finished it, if any

  int64_t num_tokens() const { return static_cast<int64_t>(all_token_ids.size()); }
  int64_t num_prompt_tokens() const { return static_cast<int64_t>(prompt_token_ids.size()); }
  int64_t num_output_tokens() const { return static_cast<int64_t>(output_token_ids.size()); }
  bool finished() const { return is_finished(status); }
  bool multimodal() const { return mm != nullptr; }
  void append_output(int32_t token);
};

}  // namespace vtllm::engine
