// Device memory as the engine sizes its caches from it (engine/cache_planner.h).
//
// device_memory_info: the whole device (cudaMemGetInfo; other processes count as
// used). memory_stats: vt's caching allocator on that device (vt/cuda/api.h): bytes
// held by live tensors, the peak of that since reset_peak_memory, and cached free
// blocks (counted as used by device_memory_info until empty_cache returns them).
// CUDA devices only: every function throws vtllm::Error naming a CPU device, or the
// missing backend in a build without CUDA. Thread-safe.
#pragma once

#include <cstdint>

#include "vt/device.h"

namespace vt {

struct DeviceMemoryInfo {
  uint64_t free = 0, total = 0;
  uint64_t used() const { return total - free; }
};
DeviceMemoryInfo device_memory_info(Device device);

struct MemoryStats {
  uint64_t in_use = 0;       // held by live tensors (allocator block sizes)
  uint64_t peak_in_use = 0;  // since the last reset_peak_memory
  uint64_t cached = 0;       // released blocks kept for reuse
};
MemoryStats memory_stats(Device device);
void reset_peak_memory(Device device);
// Returns the allocator's cached blocks of `device` to the driver.
void empty_cache(Device device);
// Frees the free blocks of `device`'s CUDA-graph pool (vt/cuda/api.h), every graph
// that used them destroyed first.
void release_graph_pool(Device device);

}  // namespace vt
