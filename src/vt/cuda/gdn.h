// CUDA arms of vt/ops/gdn.h (no CUDA headers; defined in cuda/gdn/). Arguments arrive
// validated; the request layout arrives read into host vectors (uploaded with the op)
// or as trusted device pointers (Varlen::on_device(), vt/ops/indices.h).
// gated_rms_norm's arm is in vt/cuda/norm.h.
//
//   causal_conv1d_silu: with no more tokens than requests (decode steps), one kernel of
//     a thread per (request, channel) that reads the slot's rows, walks the request's
//     tokens with the window in registers and writes the slot back. Otherwise a
//     streaming kernel, a thread per (4 adjacent channels, run of 8..64 tokens) with the
//     window and the weights in registers, the run's request found by binary search over
//     the starts (the window restarts from the slot at a request boundary); the window's
//     rows before a request's first token come from its state slot; a second kernel then
//     rolls each request's state
//     (ordered after the first on the stream, so no thread reads a state row another
//     has overwritten). Both forms give the same bits. B <= 65535.
//   gdn_gates: one thread per (token, value head).
//   gated_delta_rule: the token recurrence of §8.6 (the recurrent op: decode). The
//     recurrence is separable by value column: column e of S evolves from k, q, beta,
//     g and v[e] alone. So each CTA owns (request, value head, 32 columns) and keeps
//     its [Dk, 32] slice of the f32 state in registers for the whole request: 4 warps,
//     a thread a float4 of columns in Dk / 16 rows (a warp load reads four 128-byte row
//     segments), the column sums over rows finished by shuffles and shared memory; k, q,
//     v staged per token. Small CTAs: eight per SM, so one's per-token barriers overlap
//     the others' state traffic (gdn/delta_rows.cuh). Dk <= 256 (32, 64, 128, 256
//     instantiated, others padded; 256 spills registers). Dv % 4 != 0, or the stream's
//     KernelConfig::gdn_decode = kWarp (VTLLM_GDN_DECODE=warp), takes the first kernel
//     (a warp per 32 columns).
//   gated_delta_rule_chunked: the chunked form of §8.7 (the chunked op: prefill and
//     mixed steps), chunks of 64 (gdn/delta_rule_chunked.cuh): a first kernel per
//     (chunk, value head) solves the chunk's unit lower-triangular system into the
//     stream's work scratch; a second per (request, value head, 32 columns) runs the
//     chunks in order from the slot's state. Both on tensor cores with 3xTF32 products
//     (chunk_wy_tc / chunk_scan_tc), to f32 rounding. Requests shorter than
//     16 tokens run the token recurrence inside the second kernel. Dk, Dv <= 128
//     (zero-padded; wider heads run gated_delta_rule). Host or device indices: a
//     device kernel numbers the chunks, and launch shapes come from a bound on their
//     count (exact with host indices, T / 64 + min(B, T / 16) with device ones). Work
//     scratch up to ~256 MiB; a call with more chunks runs as several passes. The same
//     math as the recurrence to f32 rounding.
//   gdn_fused_recurrent: one kernel (gdn/fused_recurrent.cu) in gated_delta_rule's rows
//     layout and token code (gdn/delta_rows.cuh), the ceil(Dv / 32) CTAs of a (request,
//     value head) one thread-block cluster; per token it l2-normalises the q and k rows,
//     computes the gates, runs the token, exchanges the head's rounded out through
//     distributed shared memory and applies the gated RMSNorm, each with the unfused
//     CUDA kernels' arithmetic and rounding points, so its out and state equal those of
//     the unfused launches bit for bit. Dk <= 128, Dv <= 256 with Dv % 4 == 0:
//     gdn_fused_recurrent_supports(). gdn_fused_recurrent_selected() is the op's choice
//     between this kernel and the CUDA op sequence (same bytes), by the stream's
//     KernelConfig::gdn_fused (VTLLM_GDN_FUSED): kOn the kernel wherever the shape
//     allows, kOff never, kAuto (default) the measured rule, the kernel while its grid
//     is at most two waves of resident CTAs.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/indices.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cuda {

void causal_conv1d_silu(Stream& s, const Tensor& x, const Tensor& w, const Varlen& req,
                        const Tensor& conv_state, const Tensor& out);
void gdn_gates(Stream& s, const Rows& a, const Rows& b, const Tensor& A_log, const Tensor& dt_bias,
               DType beta_round, const Tensor& g, const Tensor& beta);
void gated_delta_rule(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& g, const Tensor& beta, float scale, const Varlen& req,
                      const Tensor& state, const Tensor& out);
void gated_delta_rule_chunked(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& g, const Tensor& beta, float scale, const Varlen& req,
                              const Tensor& state, const Tensor& out);
bool gdn_fused_recurrent_supports(int64_t dk, int64_t dv);
bool gdn_fused_recurrent_selected(Stream& s, int64_t batch, int64_t hv, int64_t dk, int64_t dv);
void gdn_fused_recurrent(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& z, const Rows& a, const Rows& b, const Tensor& A_log,
                         const Tensor& dt_bias, DType beta_round, float scale, const Tensor& norm_w,
                         float eps, const Varlen& req, const Tensor& state, const Tensor& out);

}  // namespace vt::cuda
