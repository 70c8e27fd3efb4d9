// Index tensors of the batched ops (paged attention, KV-cache writes, GDN), read
// once into host vectors by the op entry points after validation, and handed to the
// backend arms (internal to vt).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "vt/tensor.h"

namespace vt {

// A 1-D CPU tensor of one of `ok` (integer dtypes), any stride, as int64 values.
std::vector<int64_t> read_index(const Tensor& t, const char* op, const char* name,
                                std::initializer_list<DType> ok);

// vLLM's flattened batch with one state slot per request (the GDN ops): request b
// owns tokens [start[b], start[b+1]) and state slot slot[b]; validated (starts run
// from 0 to the token count without decreasing, slots in range and distinct).
struct Varlen {
  std::vector<int64_t> start;  // [B + 1]
  std::vector<int64_t> slot;   // [B]
  int64_t batch() const { return int64_t(slot.size()); }
  int64_t len(int64_t b) const { return start[size_t(b + 1)] - start[size_t(b)]; }
};
Varlen read_varlen(const Tensor& query_start_loc, const Tensor& state_slots, int64_t tokens,
                   int64_t num_slots, const char* op);

// Paged attention's batch: query_start_loc, seq_lens and the block table, validated
// against the cache (every block a request's seq_len reaches is a real block).
struct PagedBatch {
  std::vector<int64_t> query_start;  // [B + 1]
  std::vector<int64_t> seq_lens;     // [B]
  const int32_t* block_table;        // [B, max_blocks], host memory
  int64_t max_blocks;
  int64_t batch() const { return int64_t(seq_lens.size()); }
};

}  // namespace vt
