// Index tensors of the batched ops (embedding ids, paged attention, KV-cache writes,
// GDN): where they may live, and the forms the op entry points hand to the backend
// arms (internal to vt).
//
// THE RULE (every op that takes index tensors: query_start_loc, seq_lens, block_table,
// slot_mapping, state_slots, token ids):
//   - Host index tensors (on the CPU): the op validates every value on the host (ranges,
//     monotone starts, distinct slots, ...) and its CUDA arm uploads them with the op
//     through the stream's pinned staging ring. Any caller, any stream.
//   - Device index tensors (on the stream's own device; CUDA streams only): TRUSTED. The
//     caller validated the values on the host before copying them to the device (the
//     model's BatchInputs does, once per step, in one packed copy). The op checks dtype,
//     rank, shape, contiguity and device from the tensor's metadata only; it never reads
//     the values on the host (no copy back, no wait), so the call can be captured in a
//     CUDA graph. Out-of-range values are undefined behaviour, as in vLLM.
//   - All index tensors of one call live on the same side (else an error naming them).
//     A CPU stream takes host index tensors only.
//   - Launch shapes that depend on index values (paged attention's tiles per request and
//     split-K count) come from host-side bounds (vt::AttentionBounds, vt/ops/attention.h)
//     when the indices are on the device; kernels read the real per-request values from
//     device memory and exit early / mask past them. Bounds given with host indices fix
//     the launch shape the same way (checked against the values), so an eager step and a
//     graph replay of the same batch take the same rounding path.
// New kernels follow the same convention: take device pointers from the *::d_* fields
// below when on_device(), else upload the host vectors (upload_indices).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "vt/ops/attention.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

// A 1-D CPU tensor of one of `ok` (integer dtypes), any stride, as int64 values.
std::vector<int64_t> read_index(const Tensor& t, const char* op, const char* name,
                                std::initializer_list<DType> ok);

// Which side the index tensors of one call live on: false for the CPU, true for the
// stream's device (never on a CPU stream). Throws when they are split across sides or
// live on another device. Undefined tensors are skipped.
using NamedIndex = std::pair<const Tensor*, const char*>;
bool indices_on_device(const Stream& s, const char* op, std::initializer_list<NamedIndex> ts);

// The device pointer of a trusted device index tensor: dtype `dt`, 1-D [n] (n < 0: any
// length) or 2-D, contiguous. Metadata checks only.
const void* device_index(const Tensor& t, const char* op, const char* name, DType dt, int64_t n);

// vLLM's flattened batch with one state slot per request (the GDN ops): request b
// owns tokens [start[b], start[b+1]) and state slot slot[b]. Host form: validated
// (starts run from 0 to the token count without decreasing, slots in range and
// distinct). Device form (on_device()): the host vectors are empty, d_start [B + 1] and
// d_slot [B] are i32 device pointers, trusted.
struct Varlen {
  std::vector<int64_t> start;  // [B + 1]
  std::vector<int64_t> slot;   // [B]
  const int32_t* d_start = nullptr;
  const int32_t* d_slot = nullptr;
  int64_t d_batch = 0;
  bool on_device() const { return d_start != nullptr; }
  int64_t batch() const { return on_device() ? d_batch : int64_t(slot.size()); }
  int64_t len(int64_t b) const { return start[size_t(b + 1)] - start[size_t(b)]; }
};
Varlen read_varlen(const Stream& s, const Tensor& query_start_loc, const Tensor& state_slots,
                   int64_t tokens, int64_t num_slots, const char* op);

// Paged attention's batch: query_start_loc, seq_lens and the block table. Host form:
// validated against the cache (every block a request's seq_len reaches is a real
// block). Device form (on_device()): query_start/seq_lens empty, d_* are i32 device
// pointers, trusted, and bounds are defined. bounds may be defined in the host form too
// (then the values were checked against them).
struct PagedBatch {
  std::vector<int64_t> query_start;  // [B + 1]
  std::vector<int64_t> seq_lens;     // [B]
  const int32_t* block_table;        // [B, max_blocks], host memory (host form)
  int64_t max_blocks;
  const int32_t* d_query_start = nullptr;
  const int32_t* d_seq_lens = nullptr;
  const int32_t* d_block_table = nullptr;
  int64_t d_batch = 0;
  AttentionBounds bounds;
  bool on_device() const { return d_query_start != nullptr; }
  int64_t batch() const { return on_device() ? d_batch : int64_t(seq_lens.size()); }
};

// The KV-cache write's slot per token: host values (validated) or a trusted i64 device
// pointer.
struct SlotMapping {
  std::vector<int64_t> host;  // [T]
  const int64_t* device = nullptr;
  bool on_device() const { return device != nullptr; }
};

}  // namespace vt
