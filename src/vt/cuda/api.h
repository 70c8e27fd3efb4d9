// The CUDA backend's entry points for the rest of vt, declared without CUDA
// headers so that CPU code (tensor.cpp, stream.cpp, op dispatch) can call them.
//
// With VTLLM_WITH_CUDA they are defined in src/vt/cuda/*.cu; without it,
// src/vt/cuda_absent.cpp defines them to throw "built without CUDA" (and
// device_count() to return 0). Only vt includes this header.
#pragma once

#include <cstddef>
#include <memory>

namespace vt::cuda {

// Devices visible to this process; 0 without a GPU or driver. Never throws.
int device_count() noexcept;

// cudaMalloc on `device` (never managed memory); the pointer is freed with
// cudaFree when the last owner goes. Throws vtllm::Error naming the size and the
// device when the allocation fails.
std::shared_ptr<void> allocate(size_t bytes, int device);

// What a CUDA vt::Stream holds: the cudaStream_t, a cuBLASLt handle and its
// workspace. Defined in src/vt/cuda/stream_state.h (CUDA code only).
struct StreamState;
struct StreamStateDeleter {
  void operator()(StreamState* s) const noexcept;
};
using StreamStatePtr = std::unique_ptr<StreamState, StreamStateDeleter>;
StreamStatePtr create_stream_state(int device);
void synchronize(StreamState& s);

// Asynchronous copy of `bytes` on the stream; either side may be host memory.
// Host memory that is not pinned makes the copy synchronous, as CUDA does.
void memcpy_async(StreamState& s, void* dst, const void* src, size_t bytes);

}  // namespace vt::cuda
