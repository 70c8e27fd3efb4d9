// Instantiations of the paged attention kernel for head_dim 64 (one file per head
// size keeps nvcc's work per file small): exact rows (head_dim 64) and padded ones
// (head_dim below 64, paged_attention.cuh).
#include "vt/cuda/attention/paged_attention_launch.cuh"

namespace vt::cuda::paged {
template void launch<64, __nv_bfloat16, false>(const Params&, int, cudaStream_t);
template void launch<64, __nv_bfloat16, true>(const Params&, int, cudaStream_t);
template void launch<64, __half, false>(const Params&, int, cudaStream_t);
template void launch<64, __half, true>(const Params&, int, cudaStream_t);
template void launch<64, float, false>(const Params&, int, cudaStream_t);
template void launch<64, float, true>(const Params&, int, cudaStream_t);
}  // namespace vt::cuda::paged
