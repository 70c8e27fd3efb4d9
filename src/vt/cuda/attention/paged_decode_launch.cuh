// The launcher template of the decode kernel (included by the per-head_dim
// instantiation files only).
#pragma once

#include "vt/cuda/attention/paged_decode.cuh"
#include "vt/cuda/check.h"

namespace vt::cuda::decode {

template <int D, class T, bool Padded>
void launch(const paged::Params& p, int batch, cudaStream_t stream) {
  constexpr int smem = smem_bytes<D>();
  // Every launch: the attribute is per device, and the call costs next to nothing.
  VT_CUDA_CHECK(cudaFuncSetAttribute(paged_decode_kernel<D, T, Padded>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(unsigned(batch), unsigned(p.hkv * p.head_chunks), unsigned(p.splits));
  paged_decode_kernel<D, T, Padded><<<grid, kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("paged attention paged_decode_kernel");
}

}  // namespace vt::cuda::decode
