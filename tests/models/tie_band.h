// The bf16 gates' rule for a greedy token that differs from the bf16 oracle's
// (cuda_parity_test.cpp, vision_fixture_test.cpp).
//
// Our logits and the oracle's are each bf16 roundings of f32 values computed in another
// order (GEMM and attention accumulation, §18.1), through every layer: measured on the
// H200 (teacher-forced, CudaParity.TracksCpuBf16AlongTheOracleTokens), the top-5 logits
// of the dense fixtures sit up to 6-7.5 bf16 ulps of the top logit from the oracle's, on
// the CPU's bf16 path as on CUDA. A divergence at a step whose context still equals the
// oracle's is accepted when
//   - the oracle's top-2 margin is inside kTieBandUlps (a near tie), or
//   - the margin is within the measured error of the two logits that traded places
//     (|ours - oracle's| of the oracle's token plus that of ours), and each of those
//     errors is at most kExplainedUlps: the flip is that step's rounding noise, and a
//     larger error is a defect however the margin falls.
// Units: bf16 ulps of the oracle's top logit at the step.
#pragma once

#include <cmath>

namespace vtllm::models::testing {

inline constexpr double kTieBandUlps = 2;
inline constexpr double kExplainedUlps = 8;

inline double bf16_ulp(double x) {
  const double a = std::abs(x);
  if (a < 1e-30) return std::ldexp(1.0, -133);  // smallest bf16 subnormal
  return std::ldexp(1.0, std::ilogb(a) - 7);    // 8 significand bits
}

// Whether a greedy token differing from the oracle's is accepted (above). top, margin:
// the oracle's top logit and top-2 margin; err_oracle_tok, err_our_tok: |ours - oracle's|
// logit of the oracle's token and of ours (NaN when the oracle did not record ours).
inline bool divergence_accepted(double top, double margin, double err_oracle_tok,
                                double err_our_tok) {
  const double ulp = bf16_ulp(top);
  if (margin <= kTieBandUlps * ulp) return true;
  if (std::isnan(err_our_tok)) return false;
  return err_oracle_tok <= kExplainedUlps * ulp && err_our_tok <= kExplainedUlps * ulp &&
         margin <= err_oracle_tok + err_our_tok;
}

}  // namespace vtllm::models::testing
