// Paged causal attention with grouped-query heads, over vLLM's flattened batch.
//
// The KV cache of one attention layer is two tensors k_cache, v_cache
// [num_blocks, block_size, Hkv, D], contiguous. A flat slot s addresses
// block s / block_size, offset s % block_size.
//
// kv_cache_write(s, k, v, slot_mapping, k_cache, v_cache):
//   k_cache[slot_mapping[t]] = k[t], v_cache[slot_mapping[t]] = v[t] for each token t.
//   k, v [T, Hkv, D] (head_dim stride 1, other strides free); slot_mapping [T] i64 on
//   the CPU, or contiguous on the stream's device (trusted: vt/ops/indices.h); a slot of
//   -1 skips the token (padding, as vLLM); any other slot must be in
//   [0, num_blocks * block_size) (checked on the host, naming the token). Values are converted
//   to the cache dtype (one rounding when it is narrower).
//
// paged_attention(s, q, k_cache, v_cache, query_start_loc, seq_lens, block_table, scale, out):
//   Request b owns query tokens [query_start_loc[b], query_start_loc[b+1]); they are the
//   LAST q_len tokens of its seq_lens[b] tokens, so query j (0-based) sits at sequence
//   index ctx + j with ctx = seq_lens[b] - q_len, and attends keys at sequence indices
//   0 .. ctx + j (causal). Key i of request b lives at slot
//   block_table[b, i / block_size] * block_size + i % block_size; the caller writes the
//   keys of this step (kv_cache_write) before calling. Query head h reads kv head
//   h / (Hq / Hkv) (consecutive groups, as PyTorch's repeat_interleave / enable_gqa).
//   out[t, h] = softmax(scale * q[t, h] . K^T) . V.
//   q, out [T, Hq, D] (head_dim stride 1, other strides free), out must not overlap q;
//   query_start_loc [B + 1], seq_lens [B], block_table [B, max_blocks] i32, block_table
//   contiguous; all on the CPU (validated), or all contiguous on the stream's device
//   (trusted, vt/ops/indices.h), which requires `bounds`. With device indices q may have
//   rows past query_start_loc[B] (a CUDA graph's tokens no request owns): out's rows
//   there are not written.
//   bounds (optional with host indices): host upper bounds of the batch, B <= batch,
//   every q_len <= max_query_len, every seq_len <= max_seq_len (checked for host
//   indices). When given, the CUDA launch shape (tiles per request, split-K count) is a
//   function of the bounds and the shapes alone, never of the values: a CUDA graph
//   captured for bounds serves any batch within them, and an eager call with the same
//   bounds rounds exactly as the replay. The CPU arm ignores them.
//   Dtypes: q, out, caches in {f32, bf16, f16}.
//   Numerics: q . k dot products, the max-subtracted softmax and the weighted sum of V
//   in f32 (CPU: the two-pass softmax of a reference; CUDA: online over key tiles); one
//   rounding at the output. With a narrow out (bf16/f16) each softmax weight
//   p = exp(s - max) is also rounded to out's dtype before it multiplies V, while the
//   normaliser sums the unrounded p: what the bf16 oracle's fused SDPA kernels do (P is
//   an operand of a bf16 tensor-core GEMM, qwen3_5.md §6.3). The max is the row's (CPU)
//   or the running max of the key tiles (CUDA); they differ in p's last bit at times.
// Backends: CPU.
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

// Host-side upper bounds of a paged_attention batch (see above); undefined (all 0) when
// the launch shape may follow the values.
struct AttentionBounds {
  int64_t batch = 0;
  int64_t max_query_len = 0;
  int64_t max_seq_len = 0;
  bool defined() const { return batch > 0 && max_query_len > 0 && max_seq_len > 0; }
};

void kv_cache_write(Stream& s, const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                    Tensor& k_cache, Tensor& v_cache);

struct SlotMapping;  // vt/ops/indices.h (which includes this header)

// kv_cache_write's argument checks, errors naming `op`, for an op that folds the write
// into its own kernel (attn_qk_norm_rope_gate's KvCacheWrite, vt/ops/attn_preamble.h):
// the slots read on the host (validated) or the trusted device pointer.
SlotMapping check_kv_cache_write(const Stream& s, const Tensor& k, const Tensor& v,
                                 const Tensor& slot_mapping, const Tensor& k_cache,
                                 const Tensor& v_cache, const char* op);

void paged_attention(Stream& s, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                     const Tensor& query_start_loc, const Tensor& seq_lens,
                     const Tensor& block_table, float scale, Tensor& out,
                     const AttentionBounds& bounds = {});

}  // namespace vt
