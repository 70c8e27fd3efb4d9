// The CUDA backend's entry points for the rest of vt, declared without CUDA
// headers so that CPU code (tensor.cpp, stream.cpp, op dispatch) can call them.
//
// With VTLLM_WITH_CUDA they are defined in src/vt/cuda/*.cu; without it,
// src/vt/cuda_absent.cpp defines them to throw "built without CUDA" (and
// device_count() to return 0). Only vt includes this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace vt {
struct KernelConfig;
}  // namespace vt

namespace vt::cuda {

// Devices visible to this process; 0 without a GPU or driver. Never throws.
int device_count() noexcept;

// cudaMemGetInfo of `device`: free and total bytes of the whole device (other
// processes' memory and the allocator's cached blocks count as used).
struct MemInfo {
  size_t free = 0, total = 0;
};
MemInfo mem_get_info(int device);

// Device memory of at least `bytes` on `device` from the caching allocator
// (vt/cuda/allocator.cu): a block released by an earlier tensor of the same size
// class when one is cached, else cudaMalloc (never managed memory). When the last
// owner goes the block returns to the cache without synchronizing; blocks of 64 MiB
// and more are not cached and go back with cudaFree (which waits for the device).
// Reuse is safe because work on one device is issued in order on one stream: the
// next owner's work is queued after the last reader's. With several live CUDA
// streams on the device, a released block waits for an event on each of them
// before reuse; with none, blocks are not cached (the last stream's end empties the
// cache). Thread-safe. Throws vtllm::Error naming the size and the device
// when cudaMalloc fails even after the cache was emptied.
std::shared_ptr<void> allocate(size_t bytes, int device);

// The caching allocator's counters for `device` (bytes are block sizes, i.e. the
// request rounded up to its size class). The engine's memory sizing reads device
// use through cudaMemGetInfo, which counts cached blocks as used.
struct AllocatorStats {
  size_t in_use_bytes = 0;       // held by live tensors
  size_t peak_in_use_bytes = 0;  // since start or reset_peak_in_use()
  size_t cached_bytes = 0;       // released, kept for reuse (cudaMalloc'd, not in use)
  size_t num_allocs = 0;         // non-empty allocations
  size_t num_reuses = 0;         // of those, served from the cache
  size_t num_device_mallocs = 0; // cudaMalloc calls made by the allocator
  size_t num_device_frees = 0;   // cudaFree calls made by the allocator
};
AllocatorStats allocator_stats(int device);
void reset_peak_in_use(int device);
// Returns every cached block of `device` to CUDA (waiting for pending work on them).
void empty_cache(int device);

// What a CUDA vt::Stream holds: the cudaStream_t, a cuBLASLt handle and its
// workspace, and a pointer to the owning vt::Stream's KernelConfig (`kernels`, which must
// outlive it). Defined in src/vt/cuda/stream_state.h (CUDA code only).
struct StreamState;
struct StreamStateDeleter {
  void operator()(StreamState* s) const noexcept;
};
using StreamStatePtr = std::unique_ptr<StreamState, StreamStateDeleter>;
StreamStatePtr create_stream_state(int device, const KernelConfig* kernels);
void synchronize(StreamState& s);

// CUDA graphs (vt/cuda/graph.cu). begin_capture starts recording the stream's work
// (cudaStreamCaptureModeRelaxed): ops issued on it are recorded, not run, until
// end_capture returns the instantiated graph. While a capture is open, every
// allocation on the device comes from the device's graph pool, whose blocks never go
// back to the general cache or to CUDA until release_graph_pool: a graph keeps
// writing the blocks its capture used, at every replay. Graphs of one device share
// the pool (a block freed during one capture may serve the next), which is safe
// while they replay one at a time on one stream and each graph's outputs stay
// referenced by their tensors. Host-to-device uploads through the staging ring are
// refused while capturing (the ring's bytes would be read at replay): ops inside a
// capture take device index tensors (vt/ops/indices.h). Op scratch buffers that a
// graph saw are retired instead of freed when they grow, so the pointers stay valid.
struct GraphExec;
struct GraphExecDeleter {
  void operator()(GraphExec* g) const noexcept;
};
using GraphExecPtr = std::unique_ptr<GraphExec, GraphExecDeleter>;
void begin_capture(StreamState& s);
// Ends the capture; on failure (an op threw, an illegal call) ends it anyway and throws.
GraphExecPtr end_capture(StreamState& s);
// Abandons an open capture (after an exception), leaving the stream usable.
void abort_capture(StreamState& s) noexcept;
bool capturing(const StreamState& s);
void replay(StreamState& s, GraphExec& g);
// Programmatic (PDL) edges of the captured graph (vt/cuda/launch.cuh), -1 when CUDA could
// not say: tests and benchmarks check that PDL launches were recorded as such.
int64_t graph_programmatic_edges(const GraphExec& g);
// Bytes the graph pool of `device` holds (in use by graph outputs and free for the
// next capture); what graphs cost beyond their outputs.
size_t graph_pool_bytes(int device);
// Frees the pool's free blocks (every graph using them destroyed first).
void release_graph_pool(int device);

// Asynchronous copy of `bytes` on the stream; either side may be host memory, which
// may be freed on return. A host-to-device copy of up to 1 MiB from pageable memory
// goes through the stream's pinned staging ring (vt/cuda/host_staging.h) and does
// not wait for the device; a larger one, and a copy into pageable host memory, is
// synchronous, as CUDA makes it.
void memcpy_async(StreamState& s, void* dst, const void* src, size_t bytes);

}  // namespace vt::cuda
