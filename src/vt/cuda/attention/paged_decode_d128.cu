// Instantiations of the decode kernel for head_dim 128 (one file per head size keeps
// nvcc's work per file small): exact rows (head_dim 128) and padded ones (a multiple
// of 8 below 128, paged_decode.cuh).
#include "vt/cuda/attention/paged_decode_launch.cuh"

namespace vt::cuda::decode {
template void launch<128, __nv_bfloat16, false>(const paged::Params&, int, cudaStream_t);
template void launch<128, __nv_bfloat16, true>(const paged::Params&, int, cudaStream_t);
template void launch<128, __half, false>(const paged::Params&, int, cudaStream_t);
template void launch<128, __half, true>(const paged::Params&, int, cudaStream_t);
}  // namespace vt::cuda::decode
