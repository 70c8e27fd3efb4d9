// BatchInputs: the index tensors of one ForwardBatch, built once per forward and
// shared by every layer (DESIGN §5).
//
// The index tensors are host (CPU) views of the batch's vectors (no copy, so the batch
// must outlive them) on every device: that is the vt contract for index arguments
// (vt/ops/indices.h: the op validates them on the host, then its CUDA arm uploads them
// into the stream's scratch), and it keeps the ids' range check free of device reads.
// Dtypes are those the ops take: i32 everywhere except slot_mapping and positions
// (i64, as the batch holds them). The one float input, cos_sin, is on the model's
// device. Host-side facts layers need to decide what to launch (which requests start
// a sequence, whether the step is decode-only) are computed here from the batch.
#pragma once

#include <cstdint>
#include <vector>

#include "models/forward_batch.h"
#include "vt/stream.h"
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
  // Host views of the batch.
  vt::Tensor token_ids;        // [T] i32
  vt::Tensor positions;        // [T] or MRoPE [3, T] i64
  vt::Tensor query_start_loc;  // [B + 1] i32
  vt::Tensor seq_lens;         // [B] i32
  vt::Tensor slot_mapping;     // [T] i64
  vt::Tensor block_table;      // [B, max_blocks_per_seq] i32
  vt::Tensor state_slots;      // [B] i32 (undefined when the batch has none)
  // [T, rotary_dim] f32 for the attention preamble (vt/ops/attn_preamble.h), built on the
  // host from the positions. Its values are rounded to the model's activation dtype:
  // the bf16 oracle rounds cos/sin to bf16 before rotating (qwen3_5.md §7.2); in f32 this
  // is the plain table.
  vt::Tensor cos_sin;
  // The state slots of the requests that start a sequence (context_lens == 0): a GDN
  // layer zeroes them before reading its state.
  std::vector<int32_t> new_state_slots;
  // Every request adds exactly one token to a non-empty context: GDN layers take the
  // per-token recurrence (as the oracle's decode step), otherwise the chunked form.
  bool decode_only = false;
};

// `rope` may be null (no rotary); cos_sin is built when it is not, on s.device();
// `act_dtype` is the model's activation dtype (for cos_sin's rounding).
BatchInputs make_batch_inputs(vt::Stream& s, const ForwardBatch& batch, const RopeSpec* rope,
                              vt::DType act_dtype);

// `values` as an i32 [n] host tensor viewing them (they must outlive it).
vt::Tensor index_tensor(const std::vector<int32_t>& values);

}  // namespace vtllm::models
