// MallocConfig: the process's glibc malloc policy for a long-running server.
//
// glibc raises its mmap threshold at run time ("dynamic threshold"): once a
// block of N bytes (N <= 32 MiB) that was mmapped is freed, later blocks below
// N come from the arenas instead. The CPU forward's tensors vary in size with
// every batch (0.1 to 6.4 MiB on the bundled model), so after warm-up they all
// land in the engine thread's arena, which fragments and keeps the freed
// pages: under tools/server_tests/soak.sh the arenas grew 28 -> 96 MiB in
// 220 s with 4 to 12 MiB in use (glibc malloc_info sampled every 10 s). With
// the threshold fixed every large block is mmapped and unmapped on free; the
// arenas then held 14 MiB, level after ~4 minutes.
#pragma once

#include <cstddef>

namespace vtllm::server {

struct MallocConfig {
  // Blocks of at least this many bytes are mmapped, and the threshold stays
  // fixed (glibc's M_MMAP_THRESHOLD; its initial default). 0: glibc's dynamic
  // threshold, untouched.
  size_t mmap_threshold = 128u << 10;
};

// Applies `config` to the whole process (mallopt); later allocations follow it.
// Throws vtllm::Error when glibc refuses the value (above 32 MiB). A no-op
// without glibc. Thread-safe (mallopt locks the arenas).
void apply_malloc_config(const MallocConfig& config);

}  // namespace vtllm::server
