// The arithmetic that vt::sample's CPU and CUDA arms share (internal to vt): the
// order-preserving key of a float and the fixed-point probability mass. Compiled as
// host code and, in CUDA sources, as device code, so both arms round alike.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define VT_HD __host__ __device__ __forceinline__
#else
#define VT_HD inline
#endif

namespace vt::sampling {

// Masses are exp(x - max) in [0, 1] scaled by 2^40: a row of V < 2^23 tokens sums
// below 2^63, and one token's resolution (1e-12 of the largest) is far below the
// float rounding of its exp.
inline constexpr double kMassScale = 1099511627776.0;  // 2^40

VT_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#endif
}

VT_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, 4);
  return x;
#endif
}

// Unsigned keys in the order of the float values (non-NaN), -0 and +0 one key: a
// radix select on keys finds the same value as a comparison sort.
VT_HD uint32_t order_key(float x) {
  if (x == 0.0f) x = 0.0f;
  const uint32_t u = float_bits(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

VT_HD float key_value(uint32_t k) {
  return bits_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// round(exp(x - m) * 2^40) for x <= m (0 for x = -inf). x - m is formed exactly in
// double; its float rounding error d_lo is folded back in as exp(hi + lo) ~
// exp(hi) * (1 + lo), so the error is expf's own (a few 1e-8).
VT_HD uint64_t mass_fixed(float x, float m) {
  if (x == -INFINITY) return 0;
  const double d = double(x) - double(m);
  const float hi = float(d);
  const double lo = d - double(hi);
  const double e = double(expf(hi)) * (1.0 + lo);
  return uint64_t(e * kMassScale + 0.5);
}

// The logprob of x given log_z, as the engine's log_softmax rounds it.
VT_HD float logprob(float x, double log_z) { return float(double(x) - log_z); }

}  // namespace vt::sampling
