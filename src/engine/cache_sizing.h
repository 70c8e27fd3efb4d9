// Sizing the paged KV cache and the GDN state slots from device memory.
//
// As vLLM's --gpu-memory-utilization: the cache takes what
//   utilization x total device memory
//   - what is in use once the model is loaded (context, weights, streams, cuBLAS
//     workspace, op scratch), measured
//   - the activation peak of the largest step (a profile forward), measured
//   - the GDN state slots (one per running request plus snapshots)
//   - what CUDA graphs hold (the runner's estimate: their logits outputs and the
//     activations of the largest capture; 0 with --enforce-eager)
// leaves, in whole blocks. CacheFootprint counts the bytes of one block and of
// one state slot from the model's CacheSpec; plan_cache() does the arithmetic
// and CachePlan::describe() prints it (the runner logs that line).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "models/cache.h"
#include "vt/device.h"
#include "vt/dtype.h"

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
  uint64_t state_bytes = 0;
  uint64_t graph_bytes = 0;      // reserved for CUDA graphs
  int64_t block_size = 0;
  uint64_t bytes_per_block = 0;
  int32_t num_blocks = 0;        // usable blocks (the null block excluded)
  uint64_t kv_bytes() const { return uint64_t(num_blocks) * bytes_per_block; }
  std::string describe() const;
};

// The arithmetic above; throws naming the numbers when not even one block fits.
CachePlan plan_cache(double utilization, uint64_t total, uint64_t in_use, uint64_t weights,
                     uint64_t activation_peak, int64_t profile_tokens, int32_t num_state_slots,
                     int64_t block_size, const CacheFootprint& footprint,
                     uint64_t graph_bytes = 0);

struct DeviceMemory {
  uint64_t free = 0, total = 0;
  uint64_t used() const { return total - free; }
};
// cudaMemGetInfo of a CUDA device (the whole device: other processes count as used).
// Throws for the CPU and in a build without CUDA.
DeviceMemory device_memory(vt::Device device);

// Runs fn() while a thread samples device_memory() and returns the largest use
// seen above the use before fn() (0 if none). vt allocates each tensor with
// cudaMalloc and frees it with cudaFree, which synchronizes, so every live set
// persists while its kernels run and the sampler sees it; a set that lives for
// less than one sample (~tens of microseconds) can be missed, hence the margin
// the runner adds.
uint64_t peak_memory_during(vt::Device device, const std::function<void()>& fn);

}  // namespace vtllm::engine
