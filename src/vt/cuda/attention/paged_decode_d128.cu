// Instantiations of the decode kernel for head_dim 128 (one file per head size keeps
// nvcc's work per file small).
#include "vt/cuda/attention/paged_decode_launch.cuh"

namespace vt::cuda::decode {
template void launch<128, __nv_bfloat16>(const paged::Params&, int, cudaStream_t);
template void launch<128, __half>(const paged::Params&, int, cudaStream_t);
}  // namespace vt::cuda::decode
