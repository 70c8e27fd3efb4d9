// The CUDA runtime side of vt: device count, allocation, streams, copies.
#include <algorithm>
#include <cstdio>
#include <cstring>

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

std::shared_ptr<void> allocate(size_t bytes, int device) {
  VT_CHECK(device >= 0 && device < device_count(), "CUDA allocation of ", bytes,
           " bytes: device cuda:", device, " does not exist (", device_count(), " visible)");
  VT_CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  if (bytes > 0) {
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      VT_THROW("CUDA allocation of ", bytes, " bytes on cuda:", device, " failed: ",
               cudaGetErrorString(e), " (", free_b >> 20, " MiB free of ", total_b >> 20, " MiB)");
    }
  }
  return std::shared_ptr<void>(p, [device](void* q) {
    if (!q) return;
    // A destructor cannot throw; a failing cudaFree means the context is gone.
    if (cudaSetDevice(device) != cudaSuccess || cudaFree(q) != cudaSuccess)
      std::fprintf(stderr, "vt: cudaFree on cuda:%d failed: %s\n", device,
                   cudaGetErrorString(cudaGetLastError()));
  });
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
  if (s.scratch[slot]) VT_CUDA_CHECK(cudaFree(s.scratch[slot]));  // waits for the device
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
  if (s->stream) cudaStreamSynchronize(s->stream);
  if (s->workspace) cudaFree(s->workspace);
  for (void* p : s->scratch)
    if (p) cudaFree(p);
  destroy_gemm_plans(s->gemm_plans);
  if (s->cublaslt) cublasLtDestroy(s->cublaslt);
  if (s->stream) cudaStreamDestroy(s->stream);
  delete s;
}

StreamStatePtr create_stream_state(int device) {
  int n = device_count();
  VT_CHECK(device >= 0 && device < n, "CUDA stream: device cuda:", device, " does not exist (",
           n, " visible)");
  StreamStatePtr s(new StreamState);
  s->device = device;
  VT_CUDA_CHECK(cudaSetDevice(device));
  VT_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  VT_CUBLAS_CHECK(cublasLtCreate(&s->cublaslt));
  VT_CUDA_CHECK(cudaMalloc(&s->workspace, StreamState::kWorkspaceBytes));
  VT_CUDA_CHECK(cudaDeviceGetAttribute(&s->num_sms, cudaDevAttrMultiProcessorCount, device));
  return s;
}

void synchronize(StreamState& s) {
  set_device(s);
  VT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
}

void memcpy_async(StreamState& s, void* dst, const void* src, size_t bytes) {
  set_device(s);
  VT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.stream));
}

}  // namespace vt::cuda
