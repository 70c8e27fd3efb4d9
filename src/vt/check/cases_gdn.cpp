// Checks of the Gated DeltaNet element ops (vt/ops/gdn.h: gdn_gates, gated_rms_norm)
// against double-precision references, with their inputs laid out as the GDN layer
// passes them: column slices of one fused projection [T, conv_dim + Hv*Dv + 2 Hv].
#include <algorithm>
#include <cmath>

#include "vt/check/cases.h"
#include "vt/ops/gdn.h"

namespace vt::check {

void check_gdn(Harness& h) {
  const int64_t T = 6, hv = 5, W = 3 * hv + 4;  // [T, W] holds ... | b | a | ...
  for (DType round : {DType::kF32, DType::kBF16, DType::kF16}) {
    const std::string cfg =
        std::string("a, b bf16[6, 5] column slices of [6, 19], beta via ") + dtype_name(round);
    h.run("gdn_gates", cfg, /*cuda_arm=*/true, [&] {
      auto proj = h.random({T, W}, DType::kBF16, 4.0);
      auto alog = h.random({hv}, DType::kBF16, 1.0), dtb = h.random({hv}, DType::kF32, 10.0);
      const Tensor b = proj.t.slice(1, 2, 2 + hv), a = proj.t.slice(1, 2 + hv, 2 + 2 * hv);
      Tensor g = h.poisoned({T, hv}, DType::kF32), beta = h.poisoned({T, hv}, DType::kF32);
      gdn_gates(h.stream(), a, b, alog.t, dtb.t, round, g, beta);
      std::vector<double> rg, rb;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < hv; ++i) {
          // dt_bias ~ N(0, 10) crosses softplus's threshold of 20 in both directions.
          const double x = proj.vals[size_t(t * W + 2 + hv + i)] + dtb.vals[size_t(i)];
          rg.push_back(-std::exp(alog.vals[size_t(i)]) * (x > 20 ? x : std::log1p(std::exp(x))));
          rb.push_back(1.0 / (1.0 + std::exp(-proj.vals[size_t(t * W + 2 + i)])));
        }
      h.compare("gdn_gates", cfg + ": g", g, rg, tolerance(DType::kF32));
      // beta is f32 but rounds through `round`: below f16's smallest normal (2^-14, beta
      // of b < -9.7) that rounding is absolute, so measure it against that floor.
      std::vector<double> mag;
      for (double v : rb) mag.push_back(std::max(std::fabs(v), round == DType::kF16 ? 0x1p-14 : 0.0));
      h.compare("gdn_gates", cfg + ": beta", beta, rb, tolerance(round), mag);
      // The rounding happened: every beta is a value of `round` (f32: trivially).
      std::vector<double> got = h.read(beta);
      for (double& v : got) v = round_as(v, round);
      h.compare("gdn_gates", cfg + ": beta representable", beta, got, 0.0);
    });
  }
  {
    // z: the [T, Hv, Dv] per-head view of the z columns of the projection (two row strides).
    const int64_t heads = 3, D = 40, PW = heads * D + 11;
    const std::string cfg = "x f32[6, 3, 40], z bf16 heads of a column slice of [6, 131] -> f32";
    h.run("gated_rms_norm", cfg, /*cuda_arm=*/true, [&] {
      auto x = h.random({T, heads, D}, DType::kF32, 2.0);
      auto proj = h.random({T, PW}, DType::kBF16, 2.0);
      auto w = h.random({D}, DType::kBF16, 1.0);
      const Tensor z = proj.t.slice(1, 11, PW).reshape({T, heads, D});
      Tensor out = h.poisoned({T, heads, D}, DType::kF32);
      gated_rms_norm(h.stream(), x.t, z, w.t, 1e-6f, out);
      std::vector<double> ref, mag;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t hh = 0; hh < heads; ++hh) {
          const double* xr = x.vals.data() + (t * heads + hh) * D;
          double ss = 0;
          for (int64_t i = 0; i < D; ++i) ss += xr[i] * xr[i];
          const double inv = 1.0 / std::sqrt(ss / double(D) + 1e-6);
          for (int64_t i = 0; i < D; ++i) {
            const double zi = proj.vals[size_t(t * PW + 11 + hh * D + i)];
            ref.push_back(xr[i] * inv * w.vals[size_t(i)] * zi / (1.0 + std::exp(-zi)));
            // silu(z) in f32 carries exp's error relative to z's size.
            mag.push_back(std::fabs(ref.back()) +
                          std::fabs(xr[i] * inv * w.vals[size_t(i)]) * 1e-6);
          }
        }
      h.compare("gated_rms_norm", cfg, out, ref, tolerance(DType::kF32), mag);
    });
  }
}

}  // namespace vt::check
