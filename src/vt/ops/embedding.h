// Embedding lookup.
//
// embedding(s, table, ids, out): out[t, :] = table[ids[t], :].
//   table [V, H] in {f32, bf16, f16}, last dim stride 1 (any row stride);
//   ids [T] in {i32, i64}, any stride, on the CPU or the stream's device; every id
//   must be in [0, V): ids on the CPU are checked before anything is written (an
//   out-of-range id throws naming it and its position); ids on the device are trusted
//   (the caller checked them, vt/ops/indices.h) and not read back;
//   out [T, H] in {f32, bf16, f16} with the [rows, D] layout of vt/ops/norm.h.
//   Numerics: exact when out's dtype holds table's; otherwise one rounding.
// Backends: CPU and CUDA.
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

void embedding(Stream& s, const Tensor& table, const Tensor& ids, Tensor& out);

}  // namespace vt
