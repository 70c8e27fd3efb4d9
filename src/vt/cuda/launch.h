// The switch for programmatic dependent launch (PDL) of the small kernels (the norms,
// activations, GDN conv/gates/recurrence, embedding, argmax) that vt/cuda/launch.cuh
// launches. Host-only, no CUDA headers: tests and benchmarks include it.
#pragma once

namespace vt::cuda {

// VTLLM_PDL=0|1 (read once, here only; default 0: on the H200 the CudaPdl.* tests pass
// but the batch-1 decode step was slower with it, docs/KERNELS.md): 1 lets
// launch_kernel() (launch.cuh) add cudaLaunchAttributeProgrammaticStreamSerialization to
// launches made while the stream is capturing a CUDA graph. Eager launches are always plain. The skinny GEMM has its
// own switch, VTLLM_GEMM_PDL (vt/cuda/gemm.h). Throws vtllm::Error on another value.
bool pdl_enabled();

// Forces pdl_enabled() to `on` while it lives, so that a test or benchmark compares both
// settings in one process. Not thread-safe against launches on other threads.
class ScopedPdl {
 public:
  explicit ScopedPdl(bool on);
  ~ScopedPdl();
  ScopedPdl(const ScopedPdl&) = delete;
  ScopedPdl& operator=(const ScopedPdl&) = delete;

 private:
  int previous_;
};

}  // namespace vt::cuda
