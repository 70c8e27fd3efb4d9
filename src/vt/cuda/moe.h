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

// moe_experts_shared's fused decode path (moe/shared_gemv.cu): launches it and returns
// true where it applies (T up to moe_gemv_max_tokens of the stream's KernelConfig, every
// tensor bf16 and 16-byte aligned, H, I, Is multiples of 8, the rows within shared
// memory); else launches nothing and returns false (the caller composes the op).
bool moe_experts_shared(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                        const Tensor& topk_ids, const Tensor& topk_weights,
                        const Tensor& shared_gate_up, const Tensor& shared_down,
                        const Tensor& shared_gate, const Tensor& out);

}  // namespace vt::cuda
