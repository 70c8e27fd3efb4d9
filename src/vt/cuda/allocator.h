// What the caching allocator (allocator.cu) needs to know from the stream side
// (CUDA sources only). The contract of allocate() and its stats is in vt/cuda/api.h.
#pragma once

#include <cuda_runtime.h>

namespace vt::cuda {

// A vt CUDA stream on `device` starts / stops. While a device has one live stream,
// a released block is reusable at once (its readers are queued before any later
// owner's work); with more, each release records an event on every live stream and
// the block waits for them. Registering a second stream synchronizes the device
// first, so blocks cached under the one-stream rule are idle. Blocks are cached only
// while a stream lives: when the last one goes the cache is returned to CUDA, and
// a block released with no live stream is freed at once. A stream must be
// synchronized before it is unregistered.
void register_stream(int device, cudaStream_t stream);
void unregister_stream(int device, cudaStream_t stream) noexcept;

// A graph capture on `device` opens / closes (vt/cuda/graph.cu): while one is open,
// allocations on the device come from its graph pool (contract: vt/cuda/api.h).
void begin_graph_pool(int device);
void end_graph_pool(int device) noexcept;

}  // namespace vt::cuda
