// Programmatic dependent launch (PDL) for the small kernels of a decode step (CUDA sources
// only; the switch is KernelConfig::pdl, vt/kernel_config.h, the design docs/KERNELS.md
// "Programmatic dependent launch").
//
// launch_kernel() starts a kernel with cudaLaunchKernelEx. While the stream is capturing a CUDA
// graph (capturing(), vt/cuda/api.h: the rule the skinny GEMM uses) and the stream's
// KernelConfig::pdl is kOn (VTLLM_PDL=1; kAuto, the default, launches these plainly), it
// adds cudaLaunchAttributeProgrammaticStreamSerialization: the kernel may then start
// once every block of the previous kernel has executed pdl_trigger() or exited, which
// lets its blocks be scheduled (and a PDL consumer such as the skinny GEMM stream its
// weights) while the previous kernel is still running. Eager launches are plain.
//
// THE RULE for a kernel launched through launch_kernel(): its first statement, in every thread
// of every block, before any early return and before it reads anything, is pdl_wait()
// (the previous grid complete, its writes visible), and pdl_trigger() comes right after.
// A block that skipped the wait could read stale data; a grid that triggered early but
// finished without waiting would let a later kernel overtake the one before it (the
// ordering is only transitive through the waits). The wait is a no-op when the grid was
// not launched with the attribute; the trigger is not: it releases a PDL-launched
// dependent (the skinny GEMM under kAuto) even when this grid was launched plainly.
// Correct either way (every PDL consumer waits first); the PDL-free baseline is
// KernelConfig::pdl = kOff (VTLLM_PDL=0). Waiting first means the kernel's own work never overlaps
// its producer: what PDL saves here is the launch, block scheduling and the producer's
// tail, and the early trigger lets the next kernel get as far as its own wait (the
// skinny GEMM: its weight prefetch).
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "vt/cuda/api.h"
#include "vt/cuda/check.h"
#include "vt/cuda/ptx.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

// griddepcontrol (sm_90, vt/cuda/ptx.cuh); nothing on older targets, which have no PDL.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  ptx::grid_dependency_wait();
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  ptx::grid_launch_dependents();
#endif
}

// Whether launch_kernel() adds the PDL attribute on this stream now.
inline bool pdl_launch(const StreamState& st) {
  return capturing(st) && st.kernels->pdl == Toggle::kOn;
}

// A launch's shape: grid, block, dynamic shared memory and the thread-block cluster size
// along x (0: no cluster attribute; else grid.x must be a multiple of it).
struct LaunchShape {
  dim3 grid, block;
  size_t smem = 0;
  unsigned cluster_x = 0;
};

// kernel<<<shape>>>(args...) on st.stream, with PDL per pdl_launch(); throws vtllm::Error
// naming `name` when the launch fails. The stream's device must be current.
template <class... Params, class... Args>
void launch_kernel(StreamState& st, const char* name, void (*kernel)(Params...),
                   const LaunchShape& shape, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = shape.grid;
  cfg.blockDim = shape.block;
  cfg.dynamicSmemBytes = shape.smem;
  cfg.stream = st.stream;
  cudaLaunchAttribute attr[2]{};
  unsigned n_attr = 0;
  if (shape.cluster_x > 0) {
    attr[n_attr].id = cudaLaunchAttributeClusterDimension;
    attr[n_attr].val.clusterDim.x = shape.cluster_x;
    attr[n_attr].val.clusterDim.y = 1;
    attr[n_attr].val.clusterDim.z = 1;
    ++n_attr;
  }
  if (pdl_launch(st)) {
    attr[n_attr].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n_attr].val.programmaticStreamSerializationAllowed = 1;
    ++n_attr;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n_attr;
  cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  const cudaError_t last = cudaGetLastError();  // as VT_CUDA_CHECK_LAUNCH: clears it too
  if (e == cudaSuccess) e = last;
  if (e != cudaSuccess) [[unlikely]]
    detail::cuda_failed(e, name, __FILE__, __LINE__);
}

// The same without a cluster: kernel<<<grid, block, smem, st.stream>>>(args...).
template <class... Params, class... Args>
void launch_kernel(StreamState& st, const char* name, void (*kernel)(Params...), dim3 grid,
                   dim3 block, size_t smem, Args&&... args) {
  launch_kernel(st, name, kernel, LaunchShape{grid, block, smem, 0}, std::forward<Args>(args)...);
}

}  // namespace vt::cuda
