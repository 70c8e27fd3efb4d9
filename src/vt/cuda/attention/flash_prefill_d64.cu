// Instantiations of the tensor-core prefill kernel for head_dim 64 (one file per head
// size keeps nvcc's work per file small): exact rows (head_dim 64) and padded ones
// (a multiple of 8 below 64, flash_prefill.cuh).
#include "vt/cuda/attention/flash_prefill_launch.cuh"

namespace vt::cuda::flash {
template void launch<64, __nv_bfloat16, false>(const paged::Params&, int, cudaStream_t);
template void launch<64, __nv_bfloat16, true>(const paged::Params&, int, cudaStream_t);
template void launch<64, __half, false>(const paged::Params&, int, cudaStream_t);
template void launch<64, __half, true>(const paged::Params&, int, cudaStream_t);
}  // namespace vt::cuda::flash
