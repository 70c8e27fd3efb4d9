// What a CUDA vt::Stream holds (CUDA sources only; see vt/cuda/api.h).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "vt/cuda/api.h"
#include "vt/cuda/host_staging.h"
#include "vt/kernel_config.h"

namespace vt::cuda {

struct GemmPlans;  // cuBLASLt plans cached per shape (cuda/gemm/plan_cache.cu)
void destroy_gemm_plans(GemmPlans* p) noexcept;

// Grow-only device buffers that op arms borrow for the length of one op: index
// tensors uploaded from the host (kIndexScratch; one upload per op) and f32 partial
// results such as split-K attention's (kWorkScratch). Reuse is safe because
// everything that reads a buffer is ordered on the stream before the next op writes
// it; growing frees the old buffer with cudaFree, which waits for the device.
enum ScratchSlot { kIndexScratch = 0, kWorkScratch = 1, kNumScratch = 2 };

struct StreamState {
  int device = 0;
  // The owning vt::Stream's kernel switches (Stream::kernel_config()); never null.
  const KernelConfig* kernels = nullptr;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
  // cuBLASLt workspace: 32 MiB, the size NVIDIA recommends for Hopper.
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;
  void* workspace = nullptr;
  void* scratch[kNumScratch] = {};
  size_t scratch_bytes[kNumScratch] = {};
  GemmPlans* gemm_plans = nullptr;
  HostStaging staging;  // pinned ring for host-to-device uploads
  int num_sms = 0;  // multiprocessors of `device`, for grid heuristics
  int cc = 0;       // compute capability of `device`: 10 major + minor (90: Hopper)
  // A device word that is zero between kernels: a kernel whose last block to finish does
  // the grid's final step (moe/router.cu) counts its blocks on it and sets it back to
  // zero before exiting, so a graph replay finds it zero again. Kernels of one stream run
  // one after another (a PDL-launched one waits for its predecessor before reading), so
  // one word serves all of them.
  unsigned* grid_ticket = nullptr;
  // CUDA graphs (vt/cuda/graph.cu): a capture is open on the stream; scratch buffers
  // have been seen by a capture, so growing one retires the old buffer (kept until the
  // stream goes) instead of freeing it under a graph that still points at it.
  bool capturing = false;
  bool scratch_pinned = false;
  std::vector<void*> retired_scratch;
};

// Makes `s.device` current on this thread (ops may be called from any thread).
void set_device(const StreamState& s);

// A scratch buffer of at least `bytes` (see ScratchSlot); its contents are undefined.
void* scratch(StreamState& s, ScratchSlot slot, size_t bytes);

// Throws vtllm::Error naming `what` and the last CUDA error (clearing it).
[[noreturn]] void throw_last_error(const char* what);

// Copies host `data` into the index scratch, ordered on the stream, and returns the
// device copy. The bytes pass through the stream's pinned staging ring, so the call
// does not wait for the device and `data` may be freed right after. The stream's
// device must be current (set_device). Throws while a graph capture is open (the ring
// would be read at replay, long after it was reused): pass device indices instead.
void refuse_upload_in_capture(const StreamState& s, const char* what);
template <class T>
const T* upload_indices(StreamState& s, const std::vector<T>& data) {
  if (s.capturing) refuse_upload_in_capture(s, "an op's host index tensors");
  void* d = scratch(s, kIndexScratch, data.size() * sizeof(T));
  s.staging.copy_to_device(d, data.data(), data.size() * sizeof(T), s.stream);
  return static_cast<const T*>(d);
}

}  // namespace vt::cuda
