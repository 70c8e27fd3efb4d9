// The launcher template of the tensor-core prefill kernel (included by the
// per-head_dim instantiation files only).
#pragma once

#include "vt/cuda/attention/flash_prefill.cuh"
#include "vt/cuda/check.h"

namespace vt::cuda::flash {

template <int D, class T, bool Padded>
void launch(const paged::Params& p, int num_tiles, cudaStream_t stream) {
  constexpr int smem = smem_bytes<D>();
  // Every launch: the attribute is per device, and the call costs next to nothing.
  VT_CUDA_CHECK(cudaFuncSetAttribute(flash_prefill_kernel<D, T, Padded>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(unsigned(num_tiles), unsigned(p.hkv * p.head_chunks), unsigned(p.splits));
  flash_prefill_kernel<D, T, Padded><<<grid, kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("paged attention flash_prefill_kernel");
}

}  // namespace vt::cuda::flash
