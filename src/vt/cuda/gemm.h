// CUDA arm of vt/ops/gemm.h (no CUDA headers; defined in cuda/gemm/). Arguments
// arrive validated: x [M, K], w [N, K], out [M, N] with the last dim contiguous,
// bias [N] contiguous or undefined.
#pragma once

#include <cstdint>

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cuda {

// out = x . w^T (+ bias): the skinny kernel when M <= kSkinnyMaxM and skinny_supports()
// holds, cuBLASLt otherwise. VTLLM_GEMM_SKINNY=0 in the environment (read once, by
// skinny_dispatch_enabled) forces cuBLASLt for A/B comparisons; unset or 1 keeps the rule.
//
// Why 16: decode is weight streaming. At M <= 16 one m16n8k16 mma pair per 16 weight
// rows covers every activation row, the [M, K] activations cost at most half the
// weight bytes in L2 reads, and cuBLASLt reaches only ~70% of the copy rate (0.043 ms
// at M=1 K=5120 N=12288 on the H200). Above 16 the activation traffic grows with M and
// cuBLASLt's tiled kernels catch up; `cuda_kernels_bench` prints both paths at
// M = 1..64 on the decode shapes to move the rule.
inline constexpr int64_t kSkinnyMaxM = 16;
void linear(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out);
// False when VTLLM_GEMM_SKINNY=0 (throws on a value other than 0 or 1).
bool skinny_dispatch_enabled();

// The skinny kernel applies: x and w both bf16 or both f16 (any out / bias dtype),
// 1 <= M <= kSkinnyLimitM, K a positive multiple of 8, x and w 16-byte aligned with row
// strides (in elements) multiples of 8 (a single row may carry any stride).
inline constexpr int64_t kSkinnyLimitM = 32;
bool skinny_supports(const Tensor& x, const Tensor& w, const Tensor& out);

// The skinny kernel itself (gemm/skinny.cu; throws unless skinny_supports): each weight
// row streamed once from HBM with 16-byte cp.async copies, products on mma.sync
// (bf16/f16 in, f32 accumulate), K split across the warps of a CTA and, when the row
// tiles alone fill the GPU's waves poorly, across the CTAs of a cluster; sums reduced in a
// fixed order (shared memory, then distributed shared memory), bias added in f32, one
// rounding to out's dtype. Deterministic: the launch and the summation order are a
// pure function of (M, N, K) and the SM count. No allocation, no host synchronisation:
// CUDA-graph capturable. `split` (benchmarks only: 1, 2, 4 or 8) overrides the cluster
// size the rule picks; 0 keeps the rule.
void linear_skinny(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias,
                   const Tensor& out, int split = 0);

// out = x . w^T (+ bias) through cuBLASLt, f32 accumulation (CUBLAS_COMPUTE_32F: f32
// inputs get true f32 products, not TF32). Direct paths: bf16 x bf16 -> bf16 or f32,
// f16 x f16 -> f16 or f32, f32 x f32 -> f32. Other pairs widen both operands to f32
// first; a bias, or an output dtype of neither kind, goes through an f32 result and
// one rounding pass, so out is always rounded once.
void linear_cublaslt(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias,
                     const Tensor& out);

}  // namespace vt::cuda
