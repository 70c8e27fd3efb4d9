// Gated DeltaNet (linear attention) ops, the math of qwen3_5.md §8, over vLLM's
// flattened batch: request b owns tokens [query_start_loc[b], query_start_loc[b+1])
// and keeps its state in slot state_slots[b] of the state tensors. The state of a
// slot is read as the initial state and overwritten with the final one; a new
// sequence starts from a zero slot (the caller zeroes it). Index tensors
// (query_start_loc [B + 1], state_slots [B]) are i32, both on the CPU (every slot must be
// in range, checked, and no two requests of one call may share a slot) or both
// contiguous on the stream's device (trusted, the same rules held by the caller; see
// vt/ops/indices.h). Launch shapes follow the tensor shapes (T, B) only.
//
// causal_conv1d_silu(s, x, w, query_start_loc, conv_state, state_slots, out)
//   Depthwise causal conv (kernel K, no bias) then SiLU, per channel c:
//     out[t, c] = silu(sum_j w[c, j] * win[t - K + 1 + j, c]), w[c, K-1] on the current token,
//   where win is the request's K-1 state rows followed by its tokens. Afterwards the
//   slot holds the last K-1 rows of win (raw inputs, oldest first). A decode step is
//   the one-token case. Numerics: f32 sum over the taps; with a narrow out (bf16/f16)
//   the sum rounds to out's dtype before SiLU and SiLU's result rounds again (the
//   oracle's conv1d then silu on bf16 tensors, qwen3_5.md §8.2); f32 out: no rounding.
//   x [T, C] (features contiguous, any row stride); w [C, K] contiguous (conv1d.weight
//   [C, 1, K] viewed); conv_state [S, K-1, C] f32 contiguous; out [T, C] contiguous,
//   not overlapping x. x, w, out in {f32, bf16, f16}.
//
// gdn_gates(s, a, b, A_log, dt_bias, beta_round, g, beta)
//   beta = R(sigmoid(b)); g = -exp(A_log) * softplus(a + dt_bias) with softplus(x) = x for
//   x > 20, else log1p(exp(x)) (PyTorch's threshold), all in f32. R rounds to
//   beta_round and widens back (round to nearest even; f32: no rounding): the oracle
//   computes sigmoid on the bf16 b and uses the bf16 result in f32 (qwen3_5.md §8.4), so
//   a bf16 model passes bf16. a, b [T, Hv] (last dim contiguous, any row stride: column
//   slices of a fused projection); A_log, dt_bias [Hv] contiguous, in {f32, bf16, f16};
//   beta_round in {f32, bf16, f16}; g, beta [T, Hv] f32 contiguous.
//
// gated_delta_rule_recurrent / gated_delta_rule_chunked
//     (s, q, k, v, g, beta, scale, query_start_loc, state, state_slots, out)
//   q, k [T, Hk, Dk] (already l2-normalised), v [T, Hv, Dv], head_dim contiguous, other
//   strides free, in {f32, bf16, f16}; g, beta [T, Hv] f32 contiguous; state
//   [S, Hv, Dk, Dv] f32 contiguous (k-major, the HF layout); out [T, Hv, Dv] contiguous.
//   Value head h uses key head h / (Hv / Hk) (consecutive groups). Per token, with the
//   query scaled by `scale` (Dk^-0.5 for Qwen3.5):
//     S <- exp(g) S;  u = beta (v - S^T k);  S <- S + k u^T;  out = S^T (scale q).
//   recurrent: that token loop (§8.6). chunked: chunks of 64 tokens, each solving the
//   unit lower-triangular system of §8.7 for the chunk's updates, then reading outputs and
//   the next state from the chunk-start state; the two agree to f32 rounding.
//   Numerics: f32 state and arithmetic, one rounding of out.
//
// gated_rms_norm(s, x, z, w, eps, out)
//   out = x / sqrt(mean(x^2) + eps) * w * silu(z) over the last dim D (plain w, norm before
//   the gate: the GDN output norm of §5.2). x, z, out [rows, D] with the rows layout of
//   vt/ops/norm.h (one or two row strides: z may be a per-head view of a column slice of
//   the fused projection); w [D] contiguous; all in {f32, bf16, f16}; f32 compute. f32
//   out: no rounding. Narrow out (bf16/f16), the oracle's three rounding points (§5.2):
//   n = R(x * r), n = R(w * n), out = R(n * silu(z)) with silu(z) in f32.
//
// gdn_fused_recurrent(s, q, k, v, z, a, b, A_log, dt_bias, beta_round, scale, norm_w, eps,
//                     query_start_loc, state, state_slots, out)
//   The GDN layer from the conv output to out_proj's input by the token recurrence, the
//   decode step's ops in one call. With q, k the raw (not yet normalised) conv-output heads:
//     qn, kn = l2_normalize(q), l2_normalize(k) into f32, eps kGdnL2NormEps;
//     g, beta = gdn_gates(a, b, A_log, dt_bias, beta_round);
//     o = gated_delta_rule_recurrent(qn, kn, v, g, beta, scale, ...) into out's dtype;
//     out = gated_rms_norm(o, z, norm_w, eps).
//   Equal to that sequence of ops on the same backend: the CPU arm is the sequence (bit
//   for bit); the CUDA arm is one kernel with the CUDA ops' arithmetic and rounding
//   points (bit for bit in its tests). q, k [T, Hk, Dk] and v, z [T, Hv, Dv], head_dim
//   contiguous, other strides free (head views of column slices of the conv output and
//   of the projection), in {f32, bf16, f16}; a, b [T, Hv] as gdn_gates; A_log, dt_bias
//   [Hv] and norm_w [Dv] contiguous, in {f32, bf16, f16}; query_start_loc, state and
//   state_slots as gated_delta_rule_recurrent; out [T, Hv, Dv] contiguous, not
//   overlapping an input. Any request lengths (a request's tokens run in order), but
//   made for decode steps: the CUDA kernel walks a request's tokens serially. Head sizes
//   the CUDA kernel does not take (Dk > 128, Dv > 256 or Dv % 4 != 0), and batches past
//   the measured rule of vt/cuda/gdn.h (VTLLM_GDN_FUSED), run the sequence of CUDA ops
//   instead (same results, five launches).
// Backends: CPU (reference) and CUDA (vt/cuda/gdn.h).
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

inline constexpr int64_t kGdnChunkSize = 64;
// The q/k l2norm's eps, fixed by the model (not rms_norm_eps; qwen3_5.md §8.5).
inline constexpr float kGdnL2NormEps = 1e-6f;

void causal_conv1d_silu(Stream& s, const Tensor& x, const Tensor& w, const Tensor& query_start_loc,
                        Tensor& conv_state, const Tensor& state_slots, Tensor& out);

void gdn_gates(Stream& s, const Tensor& a, const Tensor& b, const Tensor& A_log,
               const Tensor& dt_bias, DType beta_round, Tensor& g, Tensor& beta);

void gated_delta_rule_recurrent(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& g, const Tensor& beta, float scale,
                                const Tensor& query_start_loc, Tensor& state,
                                const Tensor& state_slots, Tensor& out);
void gated_delta_rule_chunked(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& g, const Tensor& beta, float scale,
                              const Tensor& query_start_loc, Tensor& state,
                              const Tensor& state_slots, Tensor& out);

void gated_rms_norm(Stream& s, const Tensor& x, const Tensor& z, const Tensor& w, float eps,
                    Tensor& out);

void gdn_fused_recurrent(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& z, const Tensor& a, const Tensor& b, const Tensor& A_log,
                         const Tensor& dt_bias, DType beta_round, float scale, const Tensor& norm_w,
                         float eps, const Tensor& query_start_loc, Tensor& state,
                         const Tensor& state_slots, Tensor& out);

}  // namespace vt
