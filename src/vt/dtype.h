// vt::DType: the element types a tensor can hold, and exact conversions between
// f32 and the narrow float formats.
//
// Narrowing (f32 -> bf16/f16/f8e4m3) rounds to nearest, ties to even, as PyTorch's
// `.to(dtype)` does; widening is exact. NaN stays NaN. f8e4m3 is the "fn" variant
// (OCP E4M3: no infinities, max finite 448, NaN = S.1111.111): like PyTorch's cast
// it does NOT saturate, so |x| >= 464 (the rounding midpoint past 448) becomes NaN;
// scale into range before casting. The conversions are inline: CPU kernels call them
// in their inner loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace vt {

enum class DType : uint8_t { kF32, kF16, kBF16, kF8E4M3, kI8, kI32, kI64, kU8 };

// Bytes per element.
size_t dtype_size(DType t);
// "f32", "f16", "bf16", "f8e4m3", "i8", "i32", "i64", "u8".
const char* dtype_name(DType t);
// Parses dtype_name()'s spelling; throws vtllm::Error naming the text otherwise.
DType dtype_from_name(std::string_view name);
bool is_floating(DType t);

// Storage types for the narrow floats: the raw bits, so `Tensor::data<BF16>()`
// is type-checked and a bf16 is never mistaken for an f16.
struct BF16 { uint16_t bits; };
struct F16 { uint16_t bits; };
struct F8E4M3 { uint8_t bits; };

// The DType of a C++ element type (for Tensor::data<T>()).
template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<F16> { static constexpr DType value = DType::kF16; };
template <> struct DTypeOf<BF16> { static constexpr DType value = DType::kBF16; };
template <> struct DTypeOf<F8E4M3> { static constexpr DType value = DType::kF8E4M3; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---- bf16: the top 16 bits of an f32.
inline float bf16_to_f32(BF16 h) { return f32_from_bits(uint32_t(h.bits) << 16); }
inline BF16 f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return BF16{uint16_t((u >> 16) | 0x0040u)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return BF16{uint16_t(u >> 16)};
}

namespace detail {
// Shifts a 24-bit significand right by `shift` (1..31), rounding to nearest even.
inline uint32_t shift_round_even(uint32_t mant, int shift) {
  uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  return q + (rem > half || (rem == half && (q & 1u)));
}
}  // namespace detail

// ---- f16 (IEEE binary16): 1 sign, 5 exponent (bias 15), 10 mantissa bits.
inline float f16_to_f32(F16 h) {
  uint32_t sign = uint32_t(h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in f32
    float v = float(m) * f32_from_bits(0x33800000u);
    return f32_from_bits(f32_bits(v) | sign);
  }
  if (e == 31) return f32_from_bits(sign | 0x7f800000u | (m << 13));
  return f32_from_bits(sign | ((e + 112) << 23) | (m << 13));
}
inline F16 f32_to_f16(float f) {
  uint32_t u = f32_bits(f), a = u & 0x7fffffffu;
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  if (a > 0x7f800000u) return F16{uint16_t(sign | 0x7e00u)};   // NaN
  if (a >= 0x477ff000u) return F16{uint16_t(sign | 0x7c00u)};  // >= 65520 rounds to inf
  if (a >= 0x38800000u) {                                      // normal f16 (>= 2^-14)
    uint32_t h = (a >> 13) - ((127u - 15u) << 10), rem = a & 0x1fffu;
    h += (rem > 0x1000u || (rem == 0x1000u && (h & 1u)));
    return F16{uint16_t(sign | h)};
  }
  if (a <= 0x33000000u) return F16{sign};  // <= 2^-25 rounds (ties to even) to zero
  uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  return F16{uint16_t(sign | detail::shift_round_even(mant, 126 - int(a >> 23)))};
}

// ---- f8e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits.
inline float f8e4m3_to_f32(F8E4M3 h) {
  uint32_t sign = uint32_t(h.bits & 0x80u) << 24, e = (h.bits >> 3) & 0xfu, m = h.bits & 7u;
  if (e == 15 && m == 7) return f32_from_bits(sign | 0x7fc00000u);
  if (e == 0) {  // zero or subnormal: m * 2^-9
    float v = float(m) * f32_from_bits(0x3b000000u);
    return f32_from_bits(f32_bits(v) | sign);
  }
  return f32_from_bits(sign | ((e + 120) << 23) | (m << 20));
}
inline F8E4M3 f32_to_f8e4m3(float f) {
  uint32_t u = f32_bits(f), a = u & 0x7fffffffu;
  uint8_t sign = uint8_t((u >> 24) & 0x80u);
  if (a > 0x43e80000u) return F8E4M3{uint8_t(sign | 0x7fu)};  // NaN, inf and |x| > 464
  if (a >= 0x3c800000u) {                                     // normal (>= 2^-6)
    uint32_t h = (a >> 20) - ((127u - 7u) << 3), rem = a & 0xfffffu;
    h += (rem > 0x80000u || (rem == 0x80000u && (h & 1u)));
    return F8E4M3{uint8_t(sign | h)};
  }
  if (a <= 0x3a800000u) return F8E4M3{sign};  // <= 2^-10 rounds to zero
  uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  return F8E4M3{uint8_t(sign | detail::shift_round_even(mant, 141 - int(a >> 23)))};
}

// Overloads so templated kernels can write to_f32(x) / from_f32<T>(v) for any float T.
inline float to_f32(float x) { return x; }
inline float to_f32(BF16 x) { return bf16_to_f32(x); }
inline float to_f32(F16 x) { return f16_to_f32(x); }
inline float to_f32(F8E4M3 x) { return f8e4m3_to_f32(x); }
template <class T> T from_f32(float v);
template <> inline float from_f32<float>(float v) { return v; }
template <> inline BF16 from_f32<BF16>(float v) { return f32_to_bf16(v); }
template <> inline F16 from_f32<F16>(float v) { return f32_to_f16(v); }
template <> inline F8E4M3 from_f32<F8E4M3>(float v) { return f32_to_f8e4m3(v); }

}  // namespace vt
