// Instantiations of the paged attention kernel padded to head_dim 512 (rows of any
// head_dim up to 512, paged_attention.cuh; one file per head size keeps nvcc's work per
// file small).
#include "vt/cuda/attention/paged_attention_launch.cuh"

namespace vt::cuda::paged {
template void launch<512, __nv_bfloat16, true>(const Params&, int, cudaStream_t);
template void launch<512, __half, true>(const Params&, int, cudaStream_t);
template void launch<512, float, true>(const Params&, int, cudaStream_t);
}  // namespace vt::cuda::paged
