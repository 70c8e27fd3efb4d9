// ForwardBatch: the model-side view of one step, vLLM's flattened layout (DESIGN §5).
//
// B requests, T tokens in all. Request b owns tokens [query_start_loc[b],
// query_start_loc[b+1]) of the flat axis: the last q_len of its seq_lens[b] tokens,
// after context_lens[b] = seq_lens[b] - q_len tokens already in the cache. Token t
// has position positions[t] (1-D, position_rows == 1) or positions[r * T + t] for the
// MRoPE rows r = temporal, height, width (position_rows == 3). Its key/value go to
// flat KV slot slot_mapping[t] = block * block_size + offset (-1: not written), and
// request b reads its keys through block_table[b * max_blocks_per_seq + i]. GDN layers
// keep request b's state in slot state_slots[b]; context_lens[b] == 0 starts it from
// zero. logits_indices are the rows of the hidden state whose logits are wanted.
// state_saves (hybrid prefix caching): request `request`'s GDN state after the first
// `offset` tokens of its step (0 < offset < its q_len) is also written to slot `slot`,
// every GDN layer's conv and recurrent state, so a snapshot can be taken inside a
// prefill chunk instead of ending the chunk there.
//
// The engine builds it directly as the base of its engine::StepPlan (the step's other
// work beside the forward pass); nothing copies it into another type.
#pragma once

#include <cstdint>
#include <vector>

namespace vtllm::models {

// One mid-step GDN state save (see above).
struct StateSave {
  int32_t request = 0;
  int32_t offset = 0;
  int32_t slot = 0;
};

struct ForwardBatch {
  int block_size = 0;
  std::vector<int32_t> token_ids;        // [T]
  std::vector<int32_t> query_start_loc;  // [B + 1]
  std::vector<int32_t> seq_lens;         // [B]
  std::vector<int32_t> context_lens;     // [B]
  std::vector<int64_t> positions;        // [position_rows * T], row-major
  int position_rows = 1;                 // 1, or 3 for MRoPE
  std::vector<int64_t> slot_mapping;     // [T]
  int32_t max_blocks_per_seq = 0;
  std::vector<int32_t> block_table;     // [B * max_blocks_per_seq]
  std::vector<int32_t> state_slots;     // [B] (models with GDN layers) or empty
  std::vector<int32_t> logits_indices;  // rows of the hidden state
  std::vector<StateSave> state_saves;   // at most one per request, requests ascending

  int64_t num_tokens() const { return int64_t(token_ids.size()); }
  int64_t num_requests() const { return int64_t(seq_lens.size()); }
};

// Checks that the fields agree with each other (sizes, monotone query_start_loc,
// context_lens + query length == seq_lens, rows in range, state saves inside their
// request's step); throws vtllm::Error naming the field. `needs_state_slots`: the model
// has GDN layers.
void validate_forward_batch(const ForwardBatch& batch, bool needs_state_slots);

}  // namespace vtllm::models
