// rope_neox's arithmetic choices on the CPU: RopeMath::kF32 on a narrow out is the f32
// rotation rounded once; RopeMath::kOutDtype rounds each product (the text models' rule).
#include "vt/ops/rope.h"

#include <gtest/gtest.h>

#include <cstring>

#include "cuda_compare.h"
#include "vt/ops/copy.h"

namespace vt {
namespace {

using cudatest::randn;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), size_t(a.numel()) * dtype_size(a.dtype())) == 0;
}

TEST(Rope, F32MathOnBf16IsTheF32RotationRoundedOnce) {
  Stream s;
  const int64_t T = 19, H = 3, D = 72, rd = 48;  // partial rotary: the tail passes through
  Tensor x = randn({T, H, D}, DType::kBF16, 4.0, 90);
  Tensor cs = randn({T, rd}, DType::kF32, 1.0, 91);
  Tensor f32 = Tensor::empty({T, H, D}, DType::kF32);
  rope_neox(s, x, cs, f32);
  const Tensor want = to_dtype(s, f32, DType::kBF16);
  Tensor got = Tensor::empty({T, H, D}, DType::kBF16);
  rope_neox(s, x, cs, got, RopeMath::kF32);
  EXPECT_TRUE(same_bits(want, got));
  Tensor in_place = Tensor::empty({T, H, D}, DType::kBF16);
  copy(s, x, in_place);
  rope_neox(s, in_place, cs, in_place, RopeMath::kF32);
  EXPECT_TRUE(same_bits(want, in_place));
  // The per-product rounding differs on these values: the choice is not a no-op.
  Tensor narrow = Tensor::empty({T, H, D}, DType::kBF16);
  rope_neox(s, x, cs, narrow);
  EXPECT_FALSE(same_bits(want, narrow));
}

}  // namespace
}  // namespace vt
