// ForwardBatch: one model step in vLLM's flattened layout (DESIGN §5), as plain
// index vectors; the model runner uploads them to the model's device.
//
// B requests, T tokens in all. Request b owns tokens
// [query_start_loc[b], query_start_loc[b+1]) of the flat axis; its context
// (tokens already in the cache) has context_lens[b] = seq_lens[b] - query
// length tokens. Token t sits at position positions[t] and its key/value go
// to flat cache slot slot_mapping[t] = block * block_size + offset; attention
// for request b reads blocks block_table[b * max_blocks_per_seq + i] (padded
// with the null block 0). Every layer must write the KV of all T tokens before
// any token attends: a request may reuse, through the prefix cache, blocks
// that another request in the same batch is filling.
// Hybrid models: state_slots[b] is request b's GDN state slot; a request with
// context_lens[b] == 0 starts from a zero state.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/scheduler.h"

namespace vtllm::engine {

struct ForwardBatch {
  int block_size = 0;
  std::vector<int32_t> token_ids;        // [T]
  std::vector<int32_t> query_start_loc;  // [B + 1]
  std::vector<int32_t> seq_lens;         // [B] context + this step's tokens
  std::vector<int32_t> context_lens;     // [B]
  std::vector<int64_t> positions;        // [T]
  std::vector<int64_t> slot_mapping;     // [T]
  int32_t max_blocks_per_seq = 0;
  std::vector<int32_t> block_table;      // [B, max_blocks_per_seq]
  std::vector<int32_t> state_slots;      // [B] (hybrid models) or empty
  // Tokens whose logits are wanted (the last token of each request whose
  // step reaches its end), and which request (index into the batch) each is.
  std::vector<int32_t> logits_indices;
  std::vector<int32_t> logits_requests;
  // Hybrid prefix caching: copy GDN state src -> dst for every pair, all of
  // `before` ahead of the forward pass and all of `after` once it is done.
  std::vector<StateCopy> state_copies_before;
  std::vector<StateCopy> state_copies_after;

  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  int64_t num_requests() const { return static_cast<int64_t>(seq_lens.size()); }
};

// Flattens a scheduler decision; request b of the batch is output.requests[b].
ForwardBatch build_forward_batch(const SchedulerOutput& output, int block_size);

}  // namespace vtllm::engine
