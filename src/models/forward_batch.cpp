#include "models/forward_batch.h"

#include "base/error.h"

namespace vtllm::models {

void validate_forward_batch(const ForwardBatch& b, bool needs_state_slots) {
  const int64_t T = b.num_tokens(), B = b.num_requests();
  const char* what = "ForwardBatch";
  VT_CHECK(b.block_size > 0, what, ": block_size ", b.block_size, " must be positive");
  VT_CHECK(int64_t(b.query_start_loc.size()) == B + 1, what, ": query_start_loc has ",
           b.query_start_loc.size(), " entries for ", B, " requests");
  VT_CHECK(int64_t(b.context_lens.size()) == B, what, ": context_lens has ", b.context_lens.size(),
           " entries for ", B, " requests");
  VT_CHECK(b.query_start_loc[0] == 0 && b.query_start_loc[size_t(B)] == T, what,
           ": query_start_loc must run from 0 to ", T, " tokens");
  for (int64_t r = 0; r < B; ++r) {
    const int64_t q = b.query_start_loc[size_t(r + 1)] - b.query_start_loc[size_t(r)];
    VT_CHECK(q >= 0 && b.context_lens[size_t(r)] >= 0 &&
                 b.context_lens[size_t(r)] + q == b.seq_lens[size_t(r)],
             what, ": request ", r, " has context ", b.context_lens[size_t(r)], " + ", q,
             " new tokens but seq_len ", b.seq_lens[size_t(r)]);
  }
  VT_CHECK(b.position_rows == 1 || b.position_rows == 3, what, ": position_rows ", b.position_rows,
           " must be 1 or 3 (MRoPE)");
  VT_CHECK(int64_t(b.positions.size()) == b.position_rows * T, what, ": positions has ",
           b.positions.size(), " entries for ", b.position_rows, " x ", T, " tokens");
  VT_CHECK(int64_t(b.slot_mapping.size()) == T, what, ": slot_mapping has ", b.slot_mapping.size(),
           " entries for ", T, " tokens");
  VT_CHECK(b.max_blocks_per_seq >= 0 &&
               int64_t(b.block_table.size()) == B * int64_t(b.max_blocks_per_seq),
           what, ": block_table has ", b.block_table.size(), " entries, expected ", B, " x ",
           b.max_blocks_per_seq);
  if (needs_state_slots)
    VT_CHECK(int64_t(b.state_slots.size()) == B, what, ": state_slots has ", b.state_slots.size(),
             " entries for ", B, " requests (the model has GDN layers)");
  int32_t last = -1;
  for (const StateSave& sv : b.state_saves) {
    VT_CHECK(sv.request > last && sv.request < B, what, ": state save for request ", sv.request,
             " (requests ascending, one save each, of ", B, ")");
    last = sv.request;
    const int64_t q =
        b.query_start_loc[size_t(sv.request + 1)] - b.query_start_loc[size_t(sv.request)];
    VT_CHECK(sv.offset > 0 && sv.offset < q, what, ": state save of request ", sv.request,
             " at offset ", sv.offset, " is not inside its ", q, " new tokens");
  }
  for (int32_t row : b.logits_indices)
    VT_CHECK(row >= 0 && row < T, what, ": logits index ", row, " is not a token of ", T);
}

}  // namespace vtllm::models
