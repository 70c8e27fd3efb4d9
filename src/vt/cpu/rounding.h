// The intermediate rounding points of the narrow (bf16/f16) kernel paths (internal to
// vt). The oracle computes a PyTorch op on bf16 tensors in f32 and rounds its result
// once, so a chain of such ops rounds after every op (qwen3_5.md §1); a kernel that
// fuses the chain rounds at the same points when its output is narrower than f32, and
// computes in plain f32 (one rounding at the end, if any) otherwise.
#pragma once

#include <cstdint>

#include "vt/dtype.h"

namespace vt::cpu {

// v rounded to dt and widened back (round to nearest even); v itself for f32.
// dt is f32, bf16 or f16.
inline float round_to(float v, DType dt) {
  if (dt == DType::kBF16) return bf16_to_f32(f32_to_bf16(v));
  if (dt == DType::kF16) return f16_to_f32(f32_to_f16(v));
  return v;
}

// Whether dt is narrower than f32 (the rounded arms of the kernels).
inline bool is_narrow(DType dt) { return dt != DType::kF32; }

// NeoX rotary in dt arithmetic on a[0 .. 2*half), in place (qwen3_5.md §7.4, HF's
// `q * cos + rotate_half(q) * sin` on bf16 tensors): every product and the sum round to
// dt. a holds dt values (the rounded norm output); c, sn hold dt values (the table is
// rounded to the activation dtype by its builder).
inline void rope_rotate_rounded(float* a, const float* c, const float* sn, int64_t half, DType dt) {
  for (int64_t j = 0; j < half; ++j) {
    const float x1 = a[j], x2 = a[j + half];
    a[j] = round_to(round_to(x1 * c[j], dt) - round_to(x2 * sn[j], dt), dt);
    a[j + half] = round_to(round_to(x2 * c[j], dt) + round_to(x1 * sn[j], dt), dt);
  }
}

}  // namespace vt::cpu
