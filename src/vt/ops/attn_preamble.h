// The full-attention preamble: q/k RMSNorm, partial NeoX rotary and the output gate,
// in one pass (AttnQkNormRopeGate), and the per-token cos/sin table it consumes.
//
// rope_cos_sin_table(positions, D, theta, mrope_section) -> f32 [T, R], R = 2 ceil(D/2)
//   The table of vt/ops/rope.h (cos in [:, :R/2], sin in [:, R/2:]). Slot i < R/2 has
//   inv_freq[i] = 1 / theta^(2i/D) (f32, as HF; D odd: see rope_cos_sin_1d) and
//   angle = f32(pos * inv_freq[i]), where pos is
//     positions [T]:     the token's position (1-D RoPE);
//     positions [3, T]:  MRoPE (temporal, height, width rows), interleaved as Qwen3-VL /
//                        Qwen3.5 (qwen3_5.md §7.3) with mrope_section {s_t, s_h, s_w}: slot i
//                        takes the height row if i % 3 == 1 and i < 3 s_h, the width row if
//                        i % 3 == 2 and i < 3 s_w, else the temporal row. The sections
//                        need not sum to R/2 (transformers clips each interleave).
//   positions are i32/i64 on the CPU. A [3, T] table whose three rows are equal is
//   bit-identical to the 1-D table of the same positions.
//
// attn_qk_norm_rope_gate(s, qg, k, q_norm_w, k_norm_w, eps, kind, cos_sin, q_out, k_out, gate_out)
//   qg [T, Hq * P]: the q projection. P = D when gate_out is undefined (plain q, Qwen3);
//     P = 2D when it is defined: per head h, qg[t, h*2D : h*2D+D] is the query and
//     qg[t, h*2D+D : (h+1)*2D] the gate (Qwen3.5, qwen3_5.md §6.1).
//   k [T, Hkv * D]: the k projection. qg and k need their features contiguous; the row
//     stride is free (the attention layer passes column slices of one fused q/k/v
//     projection output).
//   q_norm_w, k_norm_w [D]: RMSNorm weights of `kind` (vt/ops/norm.h), applied per head.
//   cos_sin [T, R] f32 contiguous (R even, R <= D): rotary on the first R dims, NeoX pairs
//     (j, j + R/2), after the norm; dims [R, D) pass through.
//   q_out [T, Hq, D], k_out [T, Hkv, D]: normed and rotated; gate_out [T, Hq, D] (optional):
//     sigmoid(gate), ready to multiply into the attention output. Outputs have head_dim
//     stride 1 (other strides free) and must not overlap the inputs.
//   Dtypes: qg, k, outputs, weights in {f32, bf16, f16}.
//   Numerics: f32 outputs: f32 throughout, no rounding. Narrow outputs (bf16/f16): the
//     rounding points of the oracle's separate ops (qwen3_5.md §5.1, §6.2, §7.4): the norm
//     output rounds (kPlain: x * r rounds before the weight too), then NeoX in the output
//     dtype's arithmetic (each product rounds, then the sum); the gate is sigmoid rounded
//     once. Identical on the CPU to rms_norm then rope_neox then sigmoid (the unfused path)
//     in either case.
//   cache (optional): the step's KV-cache write folded in. After the call k_cache and
//     v_cache hold exactly what kv_cache_write(s, k_out, v, slot_mapping, k_cache, v_cache)
//     (vt/ops/attention.h: its arguments, checks and conversion) would write after it;
//     on CUDA the preamble's kernel writes them, one launch less per attention layer.
// Backends: CPU and CUDA (vt/cuda/attention/preamble.cu).
#pragma once

#include <cstdint>
#include <vector>

#include "vt/ops/norm.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

Tensor rope_cos_sin_table(const Tensor& positions, int64_t rotary_dim, double theta,
                          const std::vector<int64_t>& mrope_section = {});

// The KV-cache write of attn_qk_norm_rope_gate (undefined: none). Tensors are handles:
// the caches are written through them.
struct KvCacheWrite {
  Tensor v, slot_mapping, k_cache, v_cache;
  bool defined() const { return k_cache.defined(); }
};

void attn_qk_norm_rope_gate(Stream& s, const Tensor& qg, const Tensor& k, const Tensor& q_norm_w,
                            const Tensor& k_norm_w, float eps, RmsNormKind kind,
                            const Tensor& cos_sin, Tensor& q_out, Tensor& k_out,
                            const Tensor& gate_out = {}, const KvCacheWrite& cache = {});

}  // namespace vt
