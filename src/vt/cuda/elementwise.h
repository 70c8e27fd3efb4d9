// CUDA arms of the elementwise ops and softmax (vt/ops/activation.h, copy.h, fill.h) and
// of the f32 epilogue that linear uses for a bias. No CUDA headers; arguments arrive
// validated, as [rows, cols] views (vt/ops/args.h). Defined in cuda/elementwise/.
#pragma once

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
// Every element of t (any strides) = value, converted to t's dtype.
void fill(Stream& s, const Tensor& t, double value);

}  // namespace vt::cuda
