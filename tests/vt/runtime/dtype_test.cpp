#include "vt/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/error.h"

namespace vt {
namespace {

// Decodes a float format from its fields with ldexp: a second, independent spelling
// of the widening conversions.
double decode(uint32_t bits, int exp_bits, int man_bits, bool fn_nan) {
  int bias = (1 << (exp_bits - 1)) - 1;
  uint32_t sign = bits >> (exp_bits + man_bits);
  uint32_t e = (bits >> man_bits) & ((1u << exp_bits) - 1), m = bits & ((1u << man_bits) - 1);
  double s = sign ? -1.0 : 1.0;
  if (fn_nan) {
    if (e == (1u << exp_bits) - 1 && m == (1u << man_bits) - 1) return NAN;
  } else if (e == (1u << exp_bits) - 1) {
    return m ? NAN : s * INFINITY;
  }
  if (e == 0) return s * std::ldexp(double(m), 1 - bias - man_bits);
  return s * std::ldexp(double(m + (1u << man_bits)), int(e) - bias - man_bits);
}

TEST(DType, SizesAndNamesRoundTrip) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF8E4M3, DType::kI8, DType::kI32,
                  DType::kI64, DType::kU8})
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_EQ(dtype_size(DType::kF8E4M3), 1u);
  EXPECT_THROW(dtype_from_name("f64"), vtllm::Error);
}

TEST(DType, WideningIsExactForEveryBitPattern) {
  for (uint32_t b = 0; b < 65536; ++b) {
    double want = decode(b, 5, 10, false), got = f16_to_f32(F16{uint16_t(b)});
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "f16 " << b;
    } else {
      EXPECT_EQ(got, want) << "f16 " << b;
    }
    double wb = decode(b, 8, 7, false), gb = bf16_to_f32(BF16{uint16_t(b)});
    if (std::isnan(wb)) {
      EXPECT_TRUE(std::isnan(gb)) << "bf16 " << b;
    } else {
      EXPECT_EQ(gb, wb) << "bf16 " << b;
    }
  }
  for (uint32_t b = 0; b < 256; ++b) {
    double want = decode(b, 4, 3, true), got = f8e4m3_to_f32(F8E4M3{uint8_t(b)});
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "f8 " << b;
    } else {
      EXPECT_EQ(got, want) << "f8 " << b;
    }
  }
  EXPECT_EQ(f8e4m3_to_f32(F8E4M3{0x7e}), 448.0f);
}

// Brute force: the nearest representable value (ties to the even code), found by
// scanning every finite code of the format in double precision.
template <class T, class Bits>
Bits nearest_even(double x, int n_codes, double (*dec)(uint32_t)) {
  double best = INFINITY;
  Bits best_code = 0;
  for (int c = 0; c < n_codes; ++c) {
    double v = dec(uint32_t(c));
    if (std::isnan(v) || std::isinf(v)) continue;
    double d = std::fabs(v - x);
    if (d < best || (d == best && (c & 1) == 0 && (best_code & 1) == 1)) {
      best = d;
      best_code = Bits(c);
    }
  }
  return best_code;
}
double dec_f16(uint32_t b) { return decode(b, 5, 10, false); }
double dec_f8(uint32_t b) { return decode(b, 4, 3, true); }

TEST(DType, NarrowingRoundsToNearestEven) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> exp16(-26, 16), exp8(-11, 9);
  for (int i = 0; i < 3000; ++i) {
    float x = float(std::ldexp(mant(rng), exp16(rng)));
    if (std::fabs(x) >= 65504.0f) continue;  // overflow tested below
    uint16_t want = nearest_even<F16, uint16_t>(std::fabs(x), 0x7c00, dec_f16);
    uint16_t got = f32_to_f16(x).bits;
    EXPECT_EQ(got & 0x7fff, want) << "x=" << x;
  }
  for (int i = 0; i < 3000; ++i) {
    float x = float(std::ldexp(mant(rng), exp8(rng)));
    if (std::fabs(x) > 448.0f) continue;
    uint8_t want = nearest_even<F8E4M3, uint8_t>(std::fabs(x), 0x7f, dec_f8);
    EXPECT_EQ(f32_to_f8e4m3(x).bits & 0x7f, want) << "x=" << x;
    EXPECT_EQ(f32_to_f8e4m3(x).bits >> 7, x < 0 ? 1 : 0) << "x=" << x;
  }
  // bf16: exact ties between neighbours go to the even mantissa.
  for (int i = 0; i < 3000; ++i) {
    uint32_t hi = 0x0080 + rng() % (0x7f7e - 0x0080);  // finite normal bf16, hi+1 too
    float lo = bf16_to_f32(BF16{uint16_t(hi)}), up = bf16_to_f32(BF16{uint16_t(hi + 1)});
    float mid = f32_from_bits((uint32_t(hi) << 16) | 0x8000u);
    ASSERT_EQ(double(mid), (double(lo) + double(up)) / 2);
    EXPECT_EQ(f32_to_bf16(mid).bits, (hi & 1) ? hi + 1 : hi);
    float below = f32_from_bits((uint32_t(hi) << 16) | 0x7fffu);
    EXPECT_EQ(f32_to_bf16(below).bits, hi);
  }
}

TEST(DType, SpecialValues) {
  EXPECT_EQ(f32_to_f16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.0f).bits, 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f).bits, 0x7c00);  // the midpoint to 2^16 rounds to inf
  EXPECT_EQ(f32_to_f16(-INFINITY).bits, 0xfc00);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(f32_to_f16(-0.0f).bits, 0x8000);
  EXPECT_EQ(f32_to_f8e4m3(464.0f).bits, 0x7e);  // tie goes to the even 448
  EXPECT_EQ(f32_to_f8e4m3(465.0f).bits, 0x7f);  // past it: NaN, as PyTorch's e4m3fn cast
  EXPECT_EQ(f32_to_f8e4m3(-INFINITY).bits, 0xff);
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.0f, -10)).bits, 0x00);  // half the least subnormal
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.5f, -10)).bits, 0x01);
}

}  // namespace
}  // namespace vt
