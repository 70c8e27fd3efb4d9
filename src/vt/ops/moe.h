// Ops of the sparse MoE block (qwen3_5.md §9.2): routing and the routed experts.
//
// Numerics are the oracle's grouped_mm path on bf16 tensors: every product rounded to
// the activation dtype where the oracle rounds, the k-way sum in f32 with one rounding.
// f32 tensors: the same formulas with no rounding (the CPU reference).
// Backends: CPU (the reference, vt/cpu/moe.cpp) and CUDA (vt/cuda/moe/).
#pragma once

#include <cstdint>

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

// logits [T, E] (f32/bf16/f16, rows of one stride) -> topk_ids [T, k] i32 and
// topk_weights [T, k] (f32/bf16/f16), contiguous:
//   p = softmax(F(logits[t])) over all E in f32; the k largest p descending (equal p:
//   the lower expert index first, as torch.topk on CUDA and vLLM); w_j = p_j / sum_j p_j
//   in f32, rounded to topk_weights' dtype. 1 <= k <= E.
void moe_route(Stream& s, const Tensor& logits, int64_t k, Tensor& topk_ids, Tensor& topk_weights);

// The router and the routing in one op, so a backend can fuse them: exactly
//   linear(x, router_w) -> logits; moe_route(logits, k) -> topk_ids, topk_weights
// with x [T, H] and router_w [E, H] in {f32, bf16, f16} (last dim stride 1), logits
// [T, E] (written: one rounding to its dtype, as linear writes it), the rest as moe_route
// takes them; logits must not overlap x, router_w or topk_weights. Every backend runs
// that composition except CUDA for decode batches when KernelConfig::moe_router is on
// (T <= 8, x and router_w bf16 and contiguous, H % 8 == 0): one kernel with the same
// rounding points and routing code, whose dot products sum in another f32 order than
// linear's (logits within a bf16 rounding of the composition's; equal where the sums
// are exact).
void moe_router(Stream& s, const Tensor& x, const Tensor& router_w, int64_t k, Tensor& logits,
                Tensor& topk_ids, Tensor& topk_weights);

// The routed experts' SwiGLU, weighted and summed over k:
//   x [T, H]; gate_up [E, 2I, H] (rows 0..I-1 the gate, I..2I-1 the up projection);
//   down [E, H, I]; topk_ids / topk_weights [T, k] from moe_route; out [T, H].
//   For token t and j < k with e = ids[t, j], w = weights[t, j]:
//     gu  = R(x[t] . gate_up[e]^T)            [2I]
//     hid = R(R(silu(F(gu[:I]))) * F(gu[I:]))  [I]   (silu_and_mul's rounding)
//     d   = R(hid . down[e]^T)                 [H]
//     y_j = R(F(d) * F(w))
//   out[t] = R(sum_j F(y_j)) accumulated in f32 in j order.
//   R rounds to out's dtype (nothing for f32). x, out, gate_up, down contiguous, one
//   activation dtype for x/out, weights in {f32, bf16}; every tensor on s's device; out
//   must not overlap x. Results do not depend on which other tokens share the call.
void moe_experts(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                 const Tensor& topk_ids, const Tensor& topk_weights, Tensor& out);

// The block's routed experts plus its gated shared expert (qwen3_5.md §9.2), one op so a
// backend can fuse them. shared_gate_up [1, 2Is, H], shared_down [1, H, Is] (a one-expert
// stack), shared_gate [1, H]; the rest as moe_experts. Per token t:
//   routed = moe_experts(x, gate_up, down, topk_ids, topk_weights)[t]
//   g      = R(sigmoid(F(R(x[t] . shared_gate[0]))))
//   shared = the one expert's SwiGLU at weight g, as moe_experts rounds it:
//            R(F(R(hid_s . shared_down[0]^T)) * F(g))
//   out[t] = R(F(routed) + F(shared))
// Every backend computes it as that composition (linear, sigmoid, moe_experts twice,
// add) except CUDA for decode batches (KernelConfig::moe_gemv): two GEMV kernels with the
// same rounding points.
void moe_experts_shared(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                        const Tensor& topk_ids, const Tensor& topk_weights,
                        const Tensor& shared_gate_up, const Tensor& shared_down,
                        const Tensor& shared_gate, Tensor& out);

}  // namespace vt
