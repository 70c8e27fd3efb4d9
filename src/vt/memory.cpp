#include "vt/memory.h"

#include "base/error.h"
#include "vt/cuda/api.h"

namespace vt {

namespace {
int cuda_index(Device d, const char* what) {
  VT_CHECK(d.is_cuda(), what, ": ", d.str(), " is not a CUDA device");
  return d.index;
}
}  // namespace

DeviceMemoryInfo device_memory_info(Device device) {
  const cuda::MemInfo m = cuda::mem_get_info(cuda_index(device, "device_memory_info"));
  return {m.free, m.total};
}

MemoryStats memory_stats(Device device) {
  const cuda::AllocatorStats a = cuda::allocator_stats(cuda_index(device, "memory_stats"));
  return {a.in_use_bytes, a.peak_in_use_bytes, a.cached_bytes};
}

void reset_peak_memory(Device device) {
  cuda::reset_peak_in_use(cuda_index(device, "reset_peak_memory"));
}

void empty_cache(Device device) { cuda::empty_cache(cuda_index(device, "empty_cache")); }

void release_graph_pool(Device device) {
  cuda::release_graph_pool(cuda_index(device, "release_graph_pool"));
}

}  // namespace vt
