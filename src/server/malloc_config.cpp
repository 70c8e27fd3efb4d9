#include "server/malloc_config.h"

#include "base/error.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace vtllm::server {

void apply_malloc_config(const MallocConfig& config) {
#if defined(__GLIBC__)
  if (config.mmap_threshold == 0) return;
  // glibc refuses thresholds above HEAP_MAX_SIZE / 2 (32 MiB on 64-bit).
  if (config.mmap_threshold > (32u << 20) ||
      mallopt(M_MMAP_THRESHOLD, static_cast<int>(config.mmap_threshold)) != 1)
    VT_THROW("malloc mmap threshold ", config.mmap_threshold,
             " bytes: glibc accepts 1 to 33554432");
#else
  (void)config;
#endif
}

}  // namespace vtllm::server
