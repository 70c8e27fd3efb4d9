// The per-(token, value head) gates of vt/ops/gdn.h gdn_gates (qwen3_5.md §8.4), written
// once for gates_kernel (conv_gates.cu) and the fused decode step (fused_recurrent.cu)
// so both give the same bits. CUDA sources of cuda/gdn/ only.
#pragma once

#include "vt/cuda/common.cuh"

namespace vt::cuda::gdn_gate {

// g = -exp(A_log) * softplus(a + dt_bias), softplus(x) = x above PyTorch's threshold 20.
__device__ __forceinline__ float log_decay(float a, float a_log, float dt_bias) {
  const float x = a + dt_bias;
  const float softplus = x > 20.0f ? x : log1pf(expf(x));
  return -expf(a_log) * softplus;
}

// sigmoid(b) rounded to beta_round (the oracle's bf16 beta).
__device__ __forceinline__ float beta(float b, DType beta_round) {
  return round_to(1.0f / (1.0f + expf(-b)), beta_round);
}

}  // namespace vt::cuda::gdn_gate
