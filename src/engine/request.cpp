#include "engine/request.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "vt/ops/sampling.h"

namespace vtllm::engine {

const char* to_string(RequestStatus s) {
  switch (s) {
    case RequestStatus::kWaiting: return "waiting";
    case RequestStatus::kRunning: return "running";
    case RequestStatus::kPreempted: return "preempted";
    case RequestStatus::kFinishedStopped: return "finished_stopped";
    case RequestStatus::kFinishedLength: return "finished_length";
    case RequestStatus::kFinishedAborted: return "finished_aborted";
    case RequestStatus::kFinishedError: return "finished_error";
  }
  return "unknown";
}

const char* to_string(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "none";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
  }
  return "unknown";
}

bool is_finished(RequestStatus s) {
  return s == RequestStatus::kFinishedStopped || s == RequestStatus::kFinishedLength ||
         s == RequestStatus::kFinishedAborted || s == RequestStatus::kFinishedError;
}

FinishReason finish_reason_of(RequestStatus s) {
  switch (s) {
    case RequestStatus::kFinishedStopped: return FinishReason::kStop;
    case RequestStatus::kFinishedLength: return FinishReason::kLength;
    case RequestStatus::kFinishedAborted: return FinishReason::kAbort;
    case RequestStatus::kFinishedError: return FinishReason::kError;
    default: return FinishReason::kNone;
  }
}

namespace {

void check_finite(const char* field, float v) {
  if (!std::isfinite(v)) VT_THROW("sampling params: ", field, " = ", v, ", expected a finite number");
}

void check_token(const char* field, int32_t id, int64_t vocab_size) {
  if (id < 0 || id >= vocab_size)
    VT_THROW("sampling params: ", field, " has token id ", id, ", outside the vocabulary [0, ",
             vocab_size, ")");
}

}  // namespace

void SamplingParams::validate(int64_t vocab_size) const {
  check_finite("temperature", temperature);
  check_finite("top_p", top_p);
  check_finite("min_p", min_p);
  check_finite("repetition_penalty", repetition_penalty);
  check_finite("frequency_penalty", frequency_penalty);
  check_finite("presence_penalty", presence_penalty);
  if (n < 1) VT_THROW("sampling params: n = ", n, ", expected at least 1");
  if (temperature < 0) VT_THROW("sampling params: temperature = ", temperature, ", expected >= 0");
  if (!(top_p > 0 && top_p <= 1)) VT_THROW("sampling params: top_p = ", top_p, ", expected (0, 1]");
  if (top_k < -1) VT_THROW("sampling params: top_k = ", top_k, ", expected -1, 0 (off) or >= 1");
  if (min_p < 0 || min_p > 1) VT_THROW("sampling params: min_p = ", min_p, ", expected [0, 1]");
  if (repetition_penalty <= 0)
    VT_THROW("sampling params: repetition_penalty = ", repetition_penalty, ", expected > 0");
  if (frequency_penalty < -2 || frequency_penalty > 2)
    VT_THROW("sampling params: frequency_penalty = ", frequency_penalty, ", expected [-2, 2]");
  if (presence_penalty < -2 || presence_penalty > 2)
    VT_THROW("sampling params: presence_penalty = ", presence_penalty, ", expected [-2, 2]");
  if (max_tokens < 1) VT_THROW("sampling params: max_tokens = ", max_tokens, ", expected >= 1");
  if (min_tokens < 0) VT_THROW("sampling params: min_tokens = ", min_tokens, ", expected >= 0");
  if (min_tokens > max_tokens)
    VT_THROW("sampling params: min_tokens = ", min_tokens, " exceeds max_tokens = ", max_tokens);
  if (logprobs && *logprobs < 0)
    VT_THROW("sampling params: logprobs = ", *logprobs, ", expected >= 0");
  if (logprobs && *logprobs > vocab_size)
    VT_THROW("sampling params: logprobs = ", *logprobs, " exceeds the vocabulary size ", vocab_size);
  if (logprobs && *logprobs > vt::kMaxDeviceLogprobs)
    VT_THROW("sampling params: logprobs = ", *logprobs, ", at most ", vt::kMaxDeviceLogprobs);
  if (prompt_logprobs && *prompt_logprobs < 0)
    VT_THROW("sampling params: prompt_logprobs = ", *prompt_logprobs, ", expected >= 0");
  if (prompt_logprobs && *prompt_logprobs > vocab_size)
    VT_THROW("sampling params: prompt_logprobs = ", *prompt_logprobs,
             " exceeds the vocabulary size ", vocab_size);
  if (prompt_logprobs && *prompt_logprobs > vt::kMaxDeviceLogprobs)
    VT_THROW("sampling params: prompt_logprobs = ", *prompt_logprobs, ", at most ",
             vt::kMaxDeviceLogprobs);
  for (const auto& [id, bias] : logit_bias) {
    check_token("logit_bias", id, vocab_size);
    if (!std::isfinite(bias))
      VT_THROW("sampling params: logit_bias for token ", id, " = ", bias, ", expected finite");
  }
  for (int32_t id : stop_token_ids) check_token("stop_token_ids", id, vocab_size);
  if (allowed_token_ids) {
    if (allowed_token_ids->empty()) VT_THROW("sampling params: allowed_token_ids is empty");
    for (int32_t id : *allowed_token_ids) check_token("allowed_token_ids", id, vocab_size);
  }
  for (const std::vector<int32_t>& word : bad_words_token_ids) {
    if (word.empty()) VT_THROW("sampling params: bad_words has a word of no tokens");
    for (int32_t id : word) check_token("bad_words", id, vocab_size);
  }
  for (const std::string& s : stop)
    if (s.empty()) VT_THROW("sampling params: stop contains an empty string");
}

Request::Request(std::string id_, std::vector<int32_t> prompt, SamplingParams params_, int priority_)
    : id(std::move(id_)),
      prompt_token_ids(std::move(prompt)),
      all_token_ids(prompt_token_ids),
      params(std::move(params_)),
      priority(priority_) {
  VT_CHECK(!prompt_token_ids.empty(), "request '", id, "': the prompt is empty");
}

void Request::append_output(int32_t token) {
  output_token_ids.push_back(token);
  all_token_ids.push_back(token);
}

}  // namespace vtllm::engine

namespace vtllm::engine {

std::shared_ptr<const MultimodalPrompt> make_multimodal_prompt(
    const multimodal::ExpandedPrompt& expanded,
    const std::vector<std::shared_ptr<const multimodal::VisionInput>>& inputs,
    multimodal::PlaceholderIds pads, int64_t merge_size) {
  VT_CHECK(expanded.placements.size() == inputs.size(),
           "multimodal prompt: ", expanded.placements.size(), " placements for ", inputs.size(),
           " items");
  auto mm = std::make_shared<MultimodalPrompt>();
  for (size_t i = 0; i < inputs.size(); ++i) {
    VT_CHECK(inputs[i] != nullptr, "multimodal prompt: item ", i, " is null");
    mm->items.push_back({inputs[i], expanded.placements[i]});
  }
  std::stable_sort(mm->items.begin(), mm->items.end(),
                   [](const MultimodalItem& a, const MultimodalItem& b) {
                     return a.placement.span_begin < b.placement.span_begin;
                   });
  std::vector<multimodal::MediaGrid> grids;
  for (const MultimodalItem& it : mm->items)
    grids.push_back({it.input->kind, it.input->grid_t, it.input->grid_h, it.input->grid_w});
  // get_rope_index takes each kind's grids in order of appearance: the sorted order.
  multimodal::MropePositions pos =
      multimodal::compute_mrope_positions(expanded.ids, grids, pads, merge_size);
  mm->mrope_positions = std::move(pos.positions);
  mm->mrope_delta = pos.delta;
  return mm;
}

}  // namespace vtllm::engine
