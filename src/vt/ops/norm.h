// Normalisations over the last dimension.
//
// Layout: x and out are seen as [rows, D] where rows is the product of the leading
// dims; the last dim must have stride 1 and the leading dims must collapse to one row
// stride (any contiguous tensor, a slice of rows or of columns) or to two (a [T, H, D]
// per-head view of a column slice of a fused [T, W] projection, strides W, D, 1: all
// heads of all tokens in one call; vt::Rows in vt/ops/args.h). out has x's shape and
// may be x itself (in place).
// Dtypes: x, out in {f32, bf16, f16}; w in {f32, bf16, f16}, shape [D], contiguous.
// Numerics: every input widened to f32, the sum of squares accumulated in f32, the
// output rounded when out is narrower than f32. The rounding points with a narrow out
// are the oracle's (qwen3_5.md §5): kOnePlus rounds once, (x * r) * (1 + w) computed in
// f32; kPlain (Qwen3RMSNorm, `w * x.to(bf16)`) rounds x * r to out's dtype, then the
// product with w rounds again. l2_normalize rounds once.
// Backends: CPU (reference) and CUDA.
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

// kPlain:   out = x / sqrt(mean(x^2) + eps) * w         (Qwen3RMSNorm)
// kOnePlus: out = x / sqrt(mean(x^2) + eps) * (1 + w)   (Qwen3.5 / Qwen3-Next RMSNorm,
//           whose weights are stored as offsets from 1)
enum class RmsNormKind { kPlain, kOnePlus };

void rms_norm(Stream& s, const Tensor& x, const Tensor& w, float eps, RmsNormKind kind, Tensor& out);

// out = x / sqrt(sum(x^2) + eps), the l2norm of Gated DeltaNet (FLA / HF
// `x * rsqrt((x*x).sum(-1) + eps)`, not F.normalize's max(norm, eps)).
void l2_normalize(Stream& s, const Tensor& x, float eps, Tensor& out);

// The residual stream's add fused with the next norm (one pass, one launch):
//   residual <- R(residual + delta);  out = rms_norm(residual, w, eps, kind)
// R rounds to residual's dtype (the oracle's residual stream rounds every add,
// qwen3_5.md §4); the norm reads the rounded residual and rounds exactly as rms_norm
// (above, both kinds). On the CPU the result is bit-identical to add(residual, delta,
// residual) then rms_norm(residual, w, eps, kind, out).
// Layout: residual, delta, out [T, H], each contiguous (the residual stream is).
// Dtypes: residual, delta, out, w in {f32, bf16, f16}; w [H] contiguous.
// out may be delta itself (each row is read whole before it is written); it must not
// overlap residual, and delta must not overlap residual.
// Backends: CPU (reference) and CUDA.
void add_rms_norm(Stream& s, Tensor& residual, const Tensor& delta, const Tensor& w, float eps,
                  RmsNormKind kind, Tensor& out);

}  // namespace vt
