// CPU arms of vt/ops/moe.h (internal): arguments arrive validated by vt/ops/moe.cpp
// (shapes, dtypes, contiguity, expert ids in range); these only compute.
#pragma once

#include <cstdint>

#include "vt/ops/args.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cpu {

// logits [T, E] rows of one stride; topk_ids [T, k] i32 and topk_weights [T, k] contiguous.
void moe_route(Stream& s, const Rows& logits, int64_t k, const Tensor& topk_ids,
               const Tensor& topk_weights);
// Every tensor contiguous; shapes as vt/ops/moe.h states.
void moe_experts(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                 const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& out);

}  // namespace vt::cpu
