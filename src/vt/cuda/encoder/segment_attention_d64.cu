// Instantiations of segment_attention's tensor-core kernel for padded head dim 64 (one
// file per head size keeps nvcc's work per file small).
#include "vt/cuda/encoder/segment_attention.cuh"

namespace vt::cuda::segattn {
template void launch<64, __nv_bfloat16>(const Params&, int, int, cudaStream_t);
template void launch<64, __half>(const Params&, int, int, cudaStream_t);
}  // namespace vt::cuda::segattn
