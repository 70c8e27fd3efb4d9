// Instantiations of the paged attention kernel for head_dim 256 (one file per head
// size keeps nvcc's work per file small).
#include "vt/cuda/attention/paged_attention_launch.cuh"

namespace vt::cuda::paged {
template void launch<256, __nv_bfloat16>(const Params&, int, cudaStream_t);
template void launch<256, __half>(const Params&, int, cudaStream_t);
template void launch<256, float>(const Params&, int, cudaStream_t);
}  // namespace vt::cuda::paged
