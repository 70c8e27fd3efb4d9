// BatchInputs: the index tensors of one ForwardBatch, built once per forward and
// shared by every layer (DESIGN §5). They are CPU tensors viewing the batch's vectors
// (no copy), so the batch must outlive them.
#pragma once

#include <cstdint>
#include <vector>

#include "models/forward_batch.h"
#include "vt/tensor.h"

namespace vtllm::models {

// The text rotary embedding of a model: rotary_dim dims of each head, base theta,
// and the MRoPE sections when the model takes [3, T] positions (empty for 1-D RoPE).
struct RopeSpec {
  int64_t rotary_dim = 0;
  double theta = 10000.0;
  std::vector<int64_t> mrope_section;
};

struct BatchInputs {
  const ForwardBatch* batch = nullptr;
  vt::Tensor token_ids;        // [T] i32
  vt::Tensor positions;        // [T] or MRoPE [3, T] i64
  vt::Tensor query_start_loc;  // [B + 1] i32
  vt::Tensor seq_lens;         // [B] i32
  vt::Tensor slot_mapping;     // [T] i64
  vt::Tensor block_table;      // [B, max_blocks_per_seq] i32
  vt::Tensor state_slots;      // [B] i32 (undefined when the batch has none)
  vt::Tensor cos_sin;          // [T, rotary_dim] f32, for the fused attention preamble
  // Every request adds exactly one token to a non-empty context: GDN layers take the
  // per-token recurrence (as the oracle's decode step), otherwise the chunked form.
  bool decode_only = false;
};

// `rope` may be null (no rotary); cos_sin is built when it is not.
BatchInputs make_batch_inputs(const ForwardBatch& batch, const RopeSpec* rope);

}  // namespace vtllm::models
