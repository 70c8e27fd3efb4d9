// Memory profiling and cache planning: how many KV blocks a CUDA device holds.
//
// As vLLM's --gpu-memory-utilization: the cache takes what
//   utilization x total device memory
//   - what is in use once the model is loaded and profiled (context, weights, streams,
//     cuBLAS workspace, op scratch), measured on the device (vt/memory.h)
//   - the activation peak of the largest step (a profile forward), from vt's caching
//     allocator (its peak of bytes held by live tensors), plus a margin
//   - the GDN state slots (one per running request plus snapshots)
//   - what CUDA graphs hold (an estimate: their logits outputs and the activations of
//     the largest capture; 0 with --enforce-eager)
// leaves, in whole blocks. CacheFootprint counts the bytes of one block and of one
// state slot from the model's CacheSpec; plan_cache() does the arithmetic,
// profile_and_plan() measures and plans, and CachePlan::describe() prints it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/decode_graphs.h"
#include "engine/kv_cache_manager.h"
#include "models/model.h"
#include "vt/stream.h"

namespace vtllm::engine {

struct CacheFootprint {
  int64_t bytes_per_block = 0;       // K and V of block_size tokens, every attention layer
  int64_t bytes_per_state_slot = 0;  // conv + recurrent state (f32), every GDN layer
};
CacheFootprint cache_footprint(const models::CacheSpec& spec, int64_t block_size,
                               vt::DType kv_dtype);

struct CachePlan {
  double utilization = 0;
  uint64_t total = 0;            // device memory
  uint64_t in_use = 0;           // measured after load + profile (weights included)
  uint64_t weights = 0;          // measured across the load (part of in_use)
  uint64_t activation_peak = 0;  // measured during the profile forward
  int64_t profile_tokens = 0;
  int32_t num_state_slots = 0;   // running slots + snapshots
  int32_t num_state_snapshots = 0;  // of those, the snapshots the plan added (fraction)
  uint64_t state_bytes = 0;
  uint64_t graph_bytes = 0;      // reserved for CUDA graphs
  int64_t block_size = 0;
  uint64_t bytes_per_block = 0;
  int32_t num_blocks = 0;        // usable blocks (the null block excluded)
  uint64_t kv_bytes() const { return uint64_t(num_blocks) * bytes_per_block; }
  std::string describe() const;
};

// The arithmetic above; throws naming the numbers when not even one block fits.
// snapshot_fraction > 0: that share of what is left for the cache becomes GDN state
// snapshots (at least one, in whole slots) on top of num_state_slots, the rest KV blocks.
CachePlan plan_cache(double utilization, uint64_t total, uint64_t in_use, uint64_t weights,
                     uint64_t activation_peak, int64_t profile_tokens, int32_t num_state_slots,
                     int64_t block_size, const CacheFootprint& footprint,
                     uint64_t graph_bytes = 0, double snapshot_fraction = 0);

// How a runner on a CUDA device sizes its cache (CPU runners take kv.num_blocks).
struct MemoryBudget {
  double gpu_memory_utilization = 0.9;
  // The largest step the scheduler may build: the profile forward runs
  // max_num_batched_tokens tokens spread over min(max_num_seqs, tokens) requests.
  int64_t max_num_batched_tokens = 2048;
  int32_t max_num_seqs = 256;
};

// Profiles `model` (loaded on a CUDA device; `weights` bytes measured across its load)
// with one forward of the budget's largest step on a probe cache just big enough for
// it, then plans the cache of `kv` (its block size, state slots and snapshots, and
// kv.snapshot_fraction's snapshots; one more slot for graphs' padding rows when
// `graphs` are on). Throws when not even one block fits.
CachePlan profile_and_plan(models::Model& model, vt::Stream& s, const KvCacheConfig& kv,
                           const MemoryBudget& budget, uint64_t weights,
                           const std::optional<GraphOptions>& graphs);

}  // namespace vtllm::engine
