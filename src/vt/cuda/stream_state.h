// What a CUDA vt::Stream holds (CUDA sources only; see vt/cuda/api.h).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "vt/cuda/api.h"

namespace vt::cuda {

struct StreamState {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
  // cuBLASLt workspace: 32 MiB, the size NVIDIA recommends for Hopper.
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;
  void* workspace = nullptr;
};

// Makes `s.device` current on this thread (ops may be called from any thread).
void set_device(const StreamState& s);

}  // namespace vt::cuda
