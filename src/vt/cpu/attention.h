// CPU arms of vt/ops/attention.h (internal): arguments arrive validated by
// vt/ops/attention.cpp; these only compute.
#pragma once

#include <vector>

#include "vt/ops/indices.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::cpu {

void kv_cache_write(Stream& s, const Tensor& k, const Tensor& v, const std::vector<int64_t>& slots,
                    const Tensor& k_cache, const Tensor& v_cache);
void paged_attention(Stream& s, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                     const PagedBatch& batch, float scale, const Tensor& out);

}  // namespace vt::cpu
