// BatchInputs: the index tensors of one ForwardBatch, built once per forward and
// shared by every layer (DESIGN §5).
//
// On the CPU the index tensors are host views of the batch's vectors (no copy, so the
// batch must outlive them). On CUDA they are views of ONE device buffer filled by one
// packed host-to-device copy per step: token ids, query_start_loc, seq_lens, the block
// table, state slots, slot_mapping and the cos/sin table. The values were validated on
// the host first (validate_forward_batch + validate_step_ranges), so the ops take them
// as trusted device indices (vt/ops/indices.h) and read nothing back. Dtypes are those
// the ops take: i32 everywhere except slot_mapping and positions (i64, as the batch
// holds them). positions stay a host view (the table is built on the host). Host-side
// facts layers need to decide what to launch (which requests start a sequence, whether
// the step is decode-only, the attention bounds) are computed here from the batch.
//
// A StepLayout pads a decode-only batch to a fixed shape for a CUDA graph (engine
// ModelRunner): `batch` requests of one token each, the block table `table_width`
// columns wide. Padding requests read the null block 0 (seq_len 1), write no KV slot
// (slot_mapping -1), keep GDN state in pad_state_slot (scratch; padding rows share it)
// and take token 0 at position 0; their outputs are garbage that no real row reads.
// With `into` (a device buffer of at least packed_bytes(...) bytes at a fixed address)
// the packed copy lands there and the views alias it, so a graph captured over one
// BatchInputs replays over the values a later make_batch_inputs with the same layout
// and buffer copied in.
#pragma once

#include <cstdint>
#include <vector>

#include "models/forward_batch.h"
#include "vt/ops/attention.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vtllm::models {

// The text rotary embedding of a model: transformers' rotary dim D (the table rotates
// vt::rope_table_width(D) dims of each head), base theta, and the MRoPE sections when
// the model takes [3, T] positions (empty for 1-D RoPE).
struct RopeSpec {
  int64_t rotary_dim = 0;
  double theta = 10000.0;
  std::vector<int64_t> mrope_section;
};

struct StepLayout {
  int64_t batch = 0;        // requests (= tokens) after padding
  int64_t table_width = 0;  // block-table columns
  int32_t pad_state_slot = -1;
  vt::AttentionBounds bounds;  // the graph's: {batch, 1, max context}
};

// ForwardBatch::state_saves as GDN layers run them: pass one over every request, each
// saving request cut in two at its offset (the piece past it runs from the save slot and
// its results are thrown away); the own slots' states are copied to the save slots; pass
// two runs the pieces past the offsets ("tails", gathered) from those states. Host i32
// vectors; empty when the batch saves nothing.
struct GdnSaves {
  std::vector<int32_t> first_start, first_slots;  // pass one: [B + S + 1], [B + S]
  std::vector<int32_t> tail_start, tail_slots;    // pass two: [S + 1], [S] (own slots)
  std::vector<int32_t> tail_rows;                 // [Tt]: the tails' rows of the step
  std::vector<int32_t> tail_index;                // [Tt]: 0 .. Tt - 1
  std::vector<int32_t> own, save;                 // [S]: slot own[i] is copied to save[i]
  bool empty() const { return own.empty(); }
};

struct BatchInputs {
  vt::Tensor token_ids;        // [T] i32
  vt::Tensor positions;        // [T] or MRoPE [3, T] i64, host
  vt::Tensor query_start_loc;  // [B + 1] i32
  vt::Tensor seq_lens;         // [B] i32
  vt::Tensor slot_mapping;     // [T] i64
  vt::Tensor block_table;      // [B, max_blocks_per_seq] i32
  vt::Tensor state_slots;      // [B] i32 (undefined when the batch has none)
  // Host views of query_start_loc and state_slots (undefined when padded): the
  // chunked GDN kernel plans its chunks from host values.
  vt::Tensor host_query_start_loc, host_state_slots;
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
  GdnSaves gdn_saves;
  // Bounds for paged_attention on CUDA: the batch's own (B, max q_len, max seq_len), or
  // the layout's when padded; undefined on the CPU.
  vt::AttentionBounds bounds;
  int64_t num_tokens = 0;
  vt::Tensor packed;  // the device buffer the CUDA views live in
};

// `rope` may be null (no rotary); cos_sin is built when it is not, on s.device();
// `act_dtype` is the model's activation dtype (for cos_sin's rounding). layout / into:
// see above (CUDA only; layout needs a decode-only batch of at most layout->batch
// requests, every seq_len within layout->bounds.max_seq_len).
BatchInputs make_batch_inputs(vt::Stream& s, const ForwardBatch& batch, const RopeSpec* rope,
                              vt::DType act_dtype, const StepLayout* layout = nullptr,
                              const vt::Tensor* into = nullptr);

// The packed bytes make_batch_inputs copies to the device, built on the host (any
// device; tests read them): sections at 16-byte-aligned byte offsets, padded to
// `layout` when given (see above).
struct PackedOffsets {
  int64_t token_ids, query_start_loc, seq_lens, block_table, state_slots, slot_mapping, cos_sin,
      end;
};
std::vector<int64_t> pack_step(const ForwardBatch& batch, const RopeSpec* rope, vt::DType act_dtype,
                               const StepLayout* layout, PackedOffsets* offsets = nullptr);

// Bytes of the packed device buffer for a step of T tokens, B requests, a block table
// `width` wide, `table_width` cos/sin columns (vt::rope_table_width; 0: none).
int64_t packed_bytes(int64_t T, int64_t B, int64_t width, int64_t table_width);

// The range checks the ops make on host indices, made once on the host for a batch
// whose indices go to the device: slots within num_blocks * block_size (or -1), the
// blocks each request reaches within num_blocks, state slots within num_state_slots
// and distinct, token ids within vocab. Throws vtllm::Error naming the field.
void validate_step_ranges(const ForwardBatch& batch, int64_t num_blocks, int64_t num_state_slots,
                          int64_t vocab);

// `values` as an i32 [n] host tensor viewing them (they must outlive it).
vt::Tensor index_tensor(const std::vector<int32_t>& values);

}  // namespace vtllm::models
