// Instantiations of the paged attention kernel for head_dim 128 (one file per head
// size keeps nvcc's work per file small): exact rows (head_dim 128) and padded ones
// (head_dim below 128, paged_attention.cuh).
#include "vt/cuda/attention/paged_attention_launch.cuh"

namespace vt::cuda::paged {
template void launch<128, __nv_bfloat16, false>(const Params&, int, cudaStream_t);
template void launch<128, __nv_bfloat16, true>(const Params&, int, cudaStream_t);
template void launch<128, __half, false>(const Params&, int, cudaStream_t);
template void launch<128, __half, true>(const Params&, int, cudaStream_t);
template void launch<128, float, false>(const Params&, int, cudaStream_t);
template void launch<128, float, true>(const Params&, int, cudaStream_t);
}  // namespace vt::cuda::paged
