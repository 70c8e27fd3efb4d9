// StepPlan: one model step as the engine plans it: the models::ForwardBatch the model
// runs (vLLM's flattened layout, models/forward_batch.h: tokens, positions, slot
// mapping, block table, state slots, logits rows), built here directly, plus what the
// engine does around the forward pass. The runner hands the plan to the model as its
// ForwardBatch base: nothing is copied into another type.
//
// Every layer must write the KV of all T tokens before any token attends: a request
// may reuse, through the prefix cache, blocks that another request in the same batch
// is filling. Block tables are padded with the null block 0. Hybrid models:
// state_slots[b] is request b's GDN state slot; context_lens[b] == 0 starts it from
// zero.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/scheduler.h"
#include "models/forward_batch.h"

namespace vtllm::engine {

// A prompt position whose next-token distribution a request wants (prompt_logprobs).
struct PromptLogprobRow {
  int32_t index = 0;     // row of token_ids (the flattened step) holding the position
  int32_t request = 0;   // the request (index into the batch)
  int64_t position = 0;  // its position in the request; it predicts prompt token position + 1
  int32_t target = 0;    // that prompt token
  int32_t top_n = 0;     // how many top tokens to return besides the target
};

// Rows [row, row + count) of the step's flat token axis take feature rows
// [feature_row, feature_row + count) of the vision item `input` (its encoder output).
struct EmbedSlice {
  int32_t row = 0;
  int32_t count = 0;
  int64_t feature_row = 0;
  std::shared_ptr<const multimodal::VisionInput> input;
  BlockHash hash() const { return {input->hash[0], input->hash[1]}; }
};

struct StepPlan : models::ForwardBatch {
  // The request (index into the batch) of each logits_indices row: the last token of
  // each request whose step reaches its end.
  std::vector<int32_t> logits_requests;
  // The step's prompt positions of requests with params.prompt_logprobs: every scheduled
  // position before the prompt's last (each chunk of a chunked prefill gives its own).
  std::vector<PromptLogprobRow> prompt_logprob_rows;
  // Hybrid prefix caching: copy GDN state src -> dst for every pair, all of
  // `before` ahead of the forward pass and all of `after` once it is done.
  std::vector<StateCopy> state_copies_before;
  std::vector<StateCopy> state_copies_after;
  // Multimodal (SchedulerOutput's encoder work): drop these encoder cache entries, then
  // encode these items, then the placeholder rows take their features (`embeds`, rows
  // ascending). A batch with a multimodal request has position_rows == 3: its prompt
  // rows the request's MRoPE positions, its later rows and every text-only request's
  // rows the same position on all three axes (the text-only one its index, the
  // multimodal one index + δ).
  std::vector<BlockHash> encoder_frees;
  std::vector<std::shared_ptr<const multimodal::VisionInput>> encoder_inputs;
  std::vector<EmbedSlice> embeds;
};

// Flattens a scheduler decision; request b of the batch is output.requests[b].
StepPlan build_step_plan(const SchedulerOutput& output, int block_size);

}  // namespace vtllm::engine
