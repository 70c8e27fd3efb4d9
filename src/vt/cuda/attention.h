// CUDA arms of vt/ops/attention.h and vt/ops/attn_preamble.h (no CUDA headers).
// Arguments arrive validated by the op entry points; index tensors arrive either read
// into host vectors (uploaded with the op, vt/cuda/stream_state.h) or as trusted
// device pointers (vt/ops/indices.h).
//
// Kernels (cuda/attention/):
//   attn_qk_norm_rope_gate: one warp per (token, head) work item (Hq query heads, then
//     Hkv key heads, 4 warps a block); every load of the item is issued before its
//     first store; the head vector is normed in registers, staged in shared memory
//     for the rotate-half pairs, written once; the gate's sigmoid is done by the warp
//     of its query head. f32 throughout, one rounding per output. head_dim <= 512.
//     With the folded cache write, a key head's warp also stores its rounded output
//     and v's head to the token's slot (loads of v and the slot issued with the rest).
//   kv_cache_write: one thread per (token, head, 8 dims) of k and v, loads before
//     stores; a 16-byte copy when k, v and the caches share a 16-bit dtype (and the
//     runs are aligned), otherwise each element converted once.
//   paged_attention: a tiled flash-attention on CUDA cores (see paged_attention.cu):
//     each CTA takes a tile of query rows (tokens x the query heads of one kv head),
//     walks the request's keys in shared-memory tiles of 32 with an online softmax,
//     and for long contexts splits the keys over several CTAs (split-K), merged by a
//     second kernel. Any head_dim up to 512 (64, 128, 256 exact; others padded to the
//     next of 32 .. 512 with zeros past head_dim); caches bf16, f16 or f32.
//     Prefill steps take a tensor-core kernel instead (flash_prefill.cuh: mma.sync
//     m16n8k16, 64 query rows per CTA, cp.async double-buffered K/V tiles, the same
//     split-K merge), and decode steps another (paged_decode.cuh: a CTA per request x
//     kv head x split streams the head's K/V once through a 3-stage cp.async ring for
//     all query heads of the group, one mma M tile of 16 heads; its own merge of the
//     request's real splits). The rule, per step: tensor cores when q, the caches and
//     out all have one dtype, bf16 or f16, head_dim is a multiple of 8 up to 256 (64,
//     128, 256 exact; others padded to the next of them: chunks past head_dim zero on
//     load, never stored), q rows are 16-byte aligned (data and strides) and out rows
//     4-byte aligned; then flash_prefill when some request has q_len > 1, paged_decode
//     when none has (both by bounds.max_query_len when bounds are given); otherwise the
//     CUDA-core kernel (f32 anywhere, mixed dtypes, other head_dims). head_dim past 512
//     is refused by name. The stream's KernelConfig::attn_decode = kCudaCores
//     (VTLLM_ATTN_DECODE=cuda_cores) sends decode steps to the CUDA-core kernel (A/B
//     comparisons; the default kTensorCores: the rule).
//     Device indices: rows of q past query_start_loc[B] (a graph's tokens no request
//     owns) are never written, split or not; padding requests (one token, seq_len 1)
//     are computed like any other.
#pragma once

#include <vector>

#include "vt/ops/attn_preamble.h"
#include "vt/ops/indices.h"
#include "vt/ops/norm.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cuda {

// cache: the folded KV-cache write (vt/ops/attn_preamble.h), its slots checked (slots
// unused when cache is undefined).
void attn_qk_norm_rope_gate(Stream& s, const Tensor& qg, const Tensor& k, const Tensor& q_norm_w,
                            const Tensor& k_norm_w, float eps, RmsNormKind kind,
                            const Tensor& cos_sin, const Tensor& q_out, const Tensor& k_out,
                            const Tensor& gate_out, const KvCacheWrite& cache,
                            const SlotMapping& slots);

void kv_cache_write(Stream& s, const Tensor& k, const Tensor& v, const SlotMapping& slots,
                    const Tensor& k_cache, const Tensor& v_cache);

void paged_attention(Stream& s, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                     const PagedBatch& batch, float scale, const Tensor& out);

}  // namespace vt::cuda
