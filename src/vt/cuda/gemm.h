// CUDA arm of vt/ops/gemm.h (no CUDA headers; defined in cuda/gemm/). Arguments
// arrive validated: x [M, K], w [N, K], out [M, N] with the last dim contiguous,
// bias [N] contiguous or undefined.
#pragma once

#include <cstdint>

#include "vt/ops/encoder.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cuda {

// out = x . w^T (+ bias): the skinny kernel when use_skinny() says so, cuBLASLt
// otherwise.
void linear(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out);

// The shipped rule, measured on the H200 (docs/BENCHMARKS.md, 2026-11-30, fourth
// session): skinny only for vocabulary heads (N >= kSkinnyMinN) at M <= kSkinnyMaxM,
// cuBLASLt everywhere else. `cuda_gemm_bench decode-gemm` (CUDA graphs, L2 cold):
// the skinny kernel streams lm_head at 97-102% of the copy ceiling at M <= 4 against
// cuBLASLt's 94% (13-44 us per step); at M = 8 they tie, from 16 cuBLASLt wins. On the
// 4096-row projections cuBLASLt is as fast or faster at every M (in-layer chains at M =
// 1: 299 us vs 323 skinny, 340 skinny+pdl), and the whole batch-1 step of the 9B shape
// took 6.54 ms with cuBLASLt only against 6.90 with skinny at M <= 16. PDL stays on
// for the skinny launches in graphs (SkinnyPdl below): it neither helped nor hurt the
// lm_head chain measurably.
inline constexpr int64_t kSkinnyMaxM = 4;
inline constexpr int64_t kSkinnyMinN = 65536;
bool skinny_rule(int64_t m, int64_t n, int64_t k);

// Whether linear() runs the skinny kernel for these operands: skinny_supports() and
// kernels.gemm_skinny (vt/kernel_config.h, VTLLM_GEMM_SKINNY): kOff cuBLASLt for every
// shape, kOn the skinny kernel wherever it is supported (M <= 32), kAuto the shipped rule,
// skinny_rule(M, N, K).
bool use_skinny(const KernelConfig& kernels, const Tensor& x, const Tensor& w, const Tensor& out);

// The skinny kernel applies: x and w both bf16 or both f16 (any out / bias dtype),
// 1 <= M <= kSkinnyLimitM, K a positive multiple of 8, x and w 16-byte aligned with row
// strides (in elements) multiples of 8 (a single row may carry any stride).
inline constexpr int64_t kSkinnyLimitM = 32;
bool skinny_supports(const Tensor& x, const Tensor& w, const Tensor& out);

// Programmatic dependent launch (PDL) of the skinny kernel. With it the kernel is
// launched with cudaLaunchAttributeProgrammaticStreamSerialization, so it may start
// while the previous kernel on the stream is still running (once every block of that
// kernel has called griddepcontrol.launch_dependents or exited): it first fills its
// shared-memory ring with weights (and, kRingL2, prefetches the next ring depth of
// its weights into L2), then waits (griddepcontrol.wait: the previous grid complete
// and its writes visible) before it reads x, and writes out only after that wait. It
// then triggers its own dependents. Without a PDL-aware predecessor (or in a stream
// whose previous operation is not a kernel) the wait is an ordinary stream dependency.
// Captured into CUDA graphs as a programmatic edge. The contract this adds: w must not
// be written by the kernel launched immediately before on the stream (weights are
// read before the wait); x, bias and out follow the usual stream order. That holds for
// the model's projections (weights written at load) but not for every caller: vt::matmul
// transposes b into a temporary and passes it as w right after, so linear() uses PDL
// only inside a CUDA-graph capture (the engine's decode graphs, whose linears are the
// model's projections) and launches plainly when eager.
//   kDefault  the stream's KernelConfig::pdl (VTLLM_PDL): kAuto (default) or kOn =
//             kRingL2 while the stream is capturing, kOff when eager; kOff = kOff
//   kOff      a plain launch (the kernel before this option existed)
//   kRing     PDL, the ring's weights issued before the wait
//   kRingL2   PDL, the ring plus an L2 prefetch of one more ring depth of weights
enum class SkinnyPdl { kDefault, kOff, kRing, kRingL2 };

// The skinny kernel itself (gemm/skinny.cu; throws unless skinny_supports): each weight
// row streamed once from HBM with 16-byte cp.async copies, products on mma.sync
// (bf16/f16 in, f32 accumulate), K split across the warps of a CTA and, when the row
// tiles alone fill the GPU's waves poorly, across the CTAs of a cluster; sums reduced in a
// fixed order (shared memory, then distributed shared memory), bias added in f32, one
// rounding to out's dtype. Deterministic: the launch and the summation order are a
// pure function of (M, N, K) and the SM count; PDL changes when data arrives, never
// the result (bit-identical with and without). No allocation, no host
// synchronisation: CUDA-graph capturable. `split` (benchmarks only: 1, 2, 4 or 8)
// overrides the cluster size the rule picks; 0 keeps the rule. `pdl` as above.
void linear_skinny(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias,
                   const Tensor& out, int split = 0, SkinnyPdl pdl = SkinnyPdl::kDefault);

// out = x . w^T (+ bias) through cuBLASLt, f32 accumulation (CUBLAS_COMPUTE_32F: f32
// inputs get true f32 products, not TF32). Direct paths: bf16 x bf16 -> bf16 or f32,
// f16 x f16 -> f16 or f32, f32 x f32 -> f32. Other pairs widen both operands to f32
// first; a bias, or an output dtype of neither kind, goes through an f32 result and
// one rounding pass, so out is always rounded once.
void linear_cublaslt(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias,
                     const Tensor& out);

// out = gelu(x . w^T (+ bias)), vt/ops/gemm.h's linear_gelu: cuBLASLt's GELU epilogue where
// it applies (kTanh, x and w of one dtype, out theirs or f32, bias of out's dtype and
// 16-byte aligned), else linear_cublaslt into f32 and the gelu kernel.
void linear_gelu(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias, GeluKind kind,
                 const Tensor& out);

}  // namespace vt::cuda
