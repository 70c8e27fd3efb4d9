// CUDA arms of vt/ops/moe.h. No CUDA headers; arguments arrive validated by the entry
// points in vt/ops/moe.cpp (shapes as documented there, contiguous, on the device).
// Neither arm synchronises with the host, so both can be captured in a CUDA graph.
// Defined in cuda/moe/.
#pragma once

#include <cstdint>

#include "vt/ops/moe.h"

namespace vt::cuda {

void moe_route(Stream& s, const Tensor& logits, int64_t k, const Tensor& topk_ids,
               const Tensor& topk_weights);
void moe_experts(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                 const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& out);

// The most tokens moe_router's fused kernel (moe/router.cu) takes.
inline constexpr int64_t kMoeRouterMaxTokens = 8;

// moe_router's fused decode path (moe/router.cu): launches it and returns true where it
// applies (KernelConfig::moe_router on, 1 <= T <= kMoeRouterMaxTokens, x and
// router_w bf16, x, router_w and logits contiguous, x and router_w 16-byte aligned,
// H % 8 == 0, k <= 32, the T routing rows of f32 within shared memory); else launches
// nothing and returns false (the caller composes linear and moe_route).
bool moe_router(Stream& s, const Tensor& x, const Tensor& router_w, int64_t k, const Tensor& logits,
                const Tensor& topk_ids, const Tensor& topk_weights);

// moe_experts_shared's fused decode path (moe/shared_gemv.cu): launches it and returns
// true where it applies (T up to moe_gemv_max_tokens of the stream's KernelConfig, every
// tensor bf16 and 16-byte aligned, H, I, Is multiples of 8, the rows within shared
// memory); else launches nothing and returns false (the caller composes the op).
bool moe_experts_shared(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                        const Tensor& topk_ids, const Tensor& topk_weights,
                        const Tensor& shared_gate_up, const Tensor& shared_down,
                        const Tensor& shared_gate, const Tensor& out);

}  // namespace vt::cuda
