// CUDA arms of the elementwise ops and softmax (vt/ops/activation.h, copy.h, fill.h) and
// of the f32 epilogue that linear uses for a bias. No CUDA headers; arguments arrive
// validated, as [rows, cols] views (vt/ops/args.h). Defined in cuda/elementwise/.
#pragma once

#include <cstdint>
#include <vector>

#include "vt/ops/args.h"

namespace vt::cuda {

enum class Binary { kAdd, kMul };
void silu_and_mul(Stream& s, const Rows& x, const Rows& out);
void sigmoid(Stream& s, const Rows& x, const Rows& out);
// Softmax over each row (elementwise/softmax.cu): a block per row.
void softmax(Stream& s, const Rows& x, const Rows& out);
void binary(Stream& s, Binary op, const Rows& a, const Rows& b, const Rows& out);
// out[r, c] = x[r, c] + bias[c] (f32 sum, one rounding at out).
void add_bias(Stream& s, const Rows& x, const Tensor& bias, const Rows& out);
// dst = src elementwise on one CUDA device: any strides (up to 8 dims), float to float
// (through f32) or integer to integer.
void copy_strided(Stream& s, const Tensor& src, const Tensor& dst);
// dst row dst_rows[i] = src row src_rows[i] (host indices, validated; row_bytes bytes per
// row, byte row strides): one launch.
void copy_rows(Stream& s, const void* src, int64_t src_stride, const std::vector<int32_t>& src_rows,
               void* dst, int64_t dst_stride, const std::vector<int32_t>& dst_rows,
               int64_t row_bytes);
// Every element of t (any strides) = value, converted to t's dtype.
void fill(Stream& s, const Tensor& t, double value);

}  // namespace vt::cuda
