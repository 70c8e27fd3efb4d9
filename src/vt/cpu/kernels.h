// CPU arms of the row-wise ops (internal to vt). The entry points in vt/ops/*.cpp
// validate shapes, dtypes and devices and pass [rows, cols] views; these only compute.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/norm.h"

namespace vt::cpu {

void rms_norm(Stream& s, const Rows& x, const Tensor& w, float eps, RmsNormKind kind, const Rows& out);
void l2_normalize(Stream& s, const Rows& x, float eps, const Rows& out);
void silu_and_mul(Stream& s, const Rows& x, const Rows& out);
void sigmoid(Stream& s, const Rows& x, const Rows& out);
void softmax(Stream& s, const Rows& x, const Rows& out);
enum class Binary { kAdd, kMul };
void binary(Stream& s, Binary op, const Rows& a, const Rows& b, const Rows& out);
void embedding(Stream& s, const Rows& table, const Tensor& ids, const Rows& out);
void argmax(Stream& s, const Rows& logits, const Tensor& out);
// x [T, heads, D] and out: element strides of T and head dims; D stride 1.
struct HeadsView {
  void* data;
  DType dtype;
  int64_t tokens, heads, head_dim, token_stride, head_stride;
};
void rope_neox(Stream& s, const HeadsView& x, const Tensor& cos_sin, const HeadsView& out,
               bool f32_math);
// Rows [t0, t1) of rope_cos_sin_1d's table (vt/ops/rope.h): positions [T] (any stride),
// inv_freq [R/2], out [T, R] f32 contiguous with R = out.size(1).
void rope_cos_sin_rows(const Tensor& positions, const float* inv_freq, const Tensor& out,
                       int64_t t0, int64_t t1);

}  // namespace vt::cpu

namespace vt::cpu {
// out [M, N] = x [M, K] . w [N, K]^T (+ bias [N] when defined); see vt/ops/gemm.h.
void linear(Stream& s, const Rows& x, const Rows& w, const Tensor& bias, const Rows& out);
}  // namespace vt::cpu
