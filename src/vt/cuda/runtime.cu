// The CUDA runtime side of vt: device count, streams, copies (allocation is
// allocator.cu).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "vt/cuda/allocator.h"
#include "vt/cuda/check.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace detail {
void cuda_failed(cudaError_t e, const char* call, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  VT_THROW("CUDA error ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ") in ", call, " at ",
           base ? base + 1 : file, ":", line);
}
void cublas_failed(cublasStatus_t e, const char* call, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  VT_THROW("cuBLAS error ", cublasLtGetStatusName(e), " (", cublasLtGetStatusString(e), ") in ",
           call, " at ", base ? base + 1 : file, ":", line);
}
}  // namespace detail

int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

MemInfo mem_get_info(int device) {
  MemInfo m;
  VT_CUDA_CHECK(cudaSetDevice(device));
  VT_CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

void set_device(const StreamState& s) { VT_CUDA_CHECK(cudaSetDevice(s.device)); }

void throw_last_error(const char* what) {
  cudaError_t e = cudaGetLastError();
  VT_THROW(what, ": CUDA error ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}

void* scratch(StreamState& s, ScratchSlot slot, size_t bytes) {
  bytes = std::max<size_t>(bytes, 256);
  if (s.scratch_bytes[slot] >= bytes) return s.scratch[slot];
  set_device(s);
  if (s.scratch[slot] && s.scratch_pinned)
    s.retired_scratch.push_back(s.scratch[slot]);  // a graph may still point at it
  else if (s.scratch[slot])
    VT_CUDA_CHECK(cudaFree(s.scratch[slot]));  // waits for the device
  s.scratch[slot] = nullptr;
  s.scratch_bytes[slot] = 0;
  const size_t grown = std::max(bytes, size_t(1) << 20);
  VT_CUDA_CHECK(cudaMalloc(&s.scratch[slot], grown));
  s.scratch_bytes[slot] = grown;
  return s.scratch[slot];
}

void StreamStateDeleter::operator()(StreamState* s) const noexcept {
  if (!s) return;
  cudaSetDevice(s->device);
  if (s->stream) {
    cudaStreamSynchronize(s->stream);
    unregister_stream(s->device, s->stream);
  }
  if (s->workspace) cudaFree(s->workspace);
  if (s->grid_ticket) cudaFree(s->grid_ticket);
  for (void* p : s->scratch)
    if (p) cudaFree(p);
  for (void* p : s->retired_scratch) cudaFree(p);
  destroy_gemm_plans(s->gemm_plans);
  if (s->cublaslt) cublasLtDestroy(s->cublaslt);
  if (s->stream) cudaStreamDestroy(s->stream);
  delete s;
}

StreamStatePtr create_stream_state(int device, const KernelConfig* kernels) {
  int n = device_count();
  VT_CHECK(device >= 0 && device < n, "CUDA stream: device cuda:", device, " does not exist (",
           n, " visible)");
  StreamStatePtr s(new StreamState);
  s->device = device;
  s->kernels = kernels;
  VT_CUDA_CHECK(cudaSetDevice(device));
  VT_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  register_stream(device, s->stream);
  VT_CUBLAS_CHECK(cublasLtCreate(&s->cublaslt));
  VT_CUDA_CHECK(cudaMalloc(&s->workspace, StreamState::kWorkspaceBytes));
  VT_CUDA_CHECK(cudaMalloc(&s->grid_ticket, sizeof(unsigned)));
  VT_CUDA_CHECK(cudaMemsetAsync(s->grid_ticket, 0, sizeof(unsigned), s->stream));
  VT_CUDA_CHECK(cudaDeviceGetAttribute(&s->num_sms, cudaDevAttrMultiProcessorCount, device));
  int major = 0, minor = 0;
  VT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  VT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  s->cc = 10 * major + minor;
  return s;
}

void synchronize(StreamState& s) {
  set_device(s);
  VT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
}

namespace {
// Copies from pageable host memory up to this size go through the pinned ring.
constexpr size_t kStagedCopyMax = size_t(1) << 20;

bool is_pageable_host(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeUnregistered;
}
bool is_device(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice;
}
}  // namespace

void refuse_upload_in_capture(const StreamState& s, const char* what) {
  VT_THROW("CUDA graph capture on cuda:", s.device, ": ", what,
           " would be copied from host memory inside the graph; pass them on the device "
           "(vt/ops/indices.h)");
}

void memcpy_async(StreamState& s, void* dst, const void* src, size_t bytes) {
  set_device(s);
  if (s.capturing && !is_device(src)) refuse_upload_in_capture(s, "a host buffer");
  if (bytes > 0 && bytes <= kStagedCopyMax && is_pageable_host(src) && is_device(dst)) {
    s.staging.copy_to_device(dst, src, bytes, s.stream);
    return;
  }
  VT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.stream));
}

}  // namespace vt::cuda
