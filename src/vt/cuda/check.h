// Error checks for CUDA code (CUDA sources only): every runtime and cuBLASLt call
// goes through VT_CUDA_CHECK / VT_CUBLAS_CHECK, every launch is followed by
// VT_CUDA_CHECK_LAUNCH(kernel name). A failure throws vtllm::Error naming the call,
// the CUDA error and the place.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "base/error.h"

namespace vt::cuda::detail {
[[noreturn]] void cuda_failed(cudaError_t e, const char* call, const char* file, int line);
[[noreturn]] void cublas_failed(cublasStatus_t e, const char* call, const char* file, int line);
}  // namespace vt::cuda::detail

#define VT_CUDA_CHECK(call)                                                       \
  do {                                                                            \
    cudaError_t vt_err_ = (call);                                                 \
    if (vt_err_ != cudaSuccess) [[unlikely]]                                      \
      ::vt::cuda::detail::cuda_failed(vt_err_, #call, __FILE__, __LINE__);        \
  } while (0)

#define VT_CUBLAS_CHECK(call)                                                     \
  do {                                                                            \
    cublasStatus_t vt_st_ = (call);                                               \
    if (vt_st_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                             \
      ::vt::cuda::detail::cublas_failed(vt_st_, #call, __FILE__, __LINE__);       \
  } while (0)

// After a <<<...>>> launch: catches bad configurations at once (asynchronous
// faults surface at the next synchronizing call, which is checked too).
#define VT_CUDA_CHECK_LAUNCH(kernel_name)                                         \
  do {                                                                            \
    cudaError_t vt_err_ = cudaGetLastError();                                     \
    if (vt_err_ != cudaSuccess) [[unlikely]]                                      \
      ::vt::cuda::detail::cuda_failed(vt_err_, "launch of " kernel_name, __FILE__, __LINE__); \
  } while (0)
