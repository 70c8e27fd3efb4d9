// The CPU add_rms_norm: per row, the residual add of cpu::binary then the norm of
// cpu::rms_norm (vt/cpu/rowwise.cpp), with the same arithmetic in the same order, so
// the fused op equals add then rms_norm bit for bit (tests/vt/norm/add_rms_norm_test.cpp).
#include "vt/cpu/add_rms_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vt/cpu/rounding.h"
#include "vt/cpu/rowio.h"

namespace vt::cpu {

void add_rms_norm(Stream& s, const Rows& residual, const Rows& delta, const Tensor& w, float eps,
                  RmsNormKind kind, const Rows& out) {
  const int64_t d = residual.cols;
  std::vector<float> wf(static_cast<size_t>(d));
  load_row(w.data_ptr(), w.dtype(), d, wf.data());
  if (kind == RmsNormKind::kOnePlus)
    for (float& v : wf) v += 1.0f;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(d, 1));
  s.parallel_for(residual.rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<float> a(static_cast<size_t>(d)), b(static_cast<size_t>(d));
    for (int64_t r = r0; r < r1; ++r) {
      load_row(residual.row(r), residual.dtype, d, a.data());
      load_row(delta.row(r), delta.dtype, d, b.data());
      for (int64_t i = 0; i < d; ++i) a[size_t(i)] += b[size_t(i)];
      // The stored (rounded) residual is what the norm reads, as add then rms_norm.
      store_row(a.data(), d, residual.dtype, residual.row(r));
      load_row(residual.row(r), residual.dtype, d, a.data());
      float ss = 0.0f;
      for (int64_t i = 0; i < d; ++i) ss += a[size_t(i)] * a[size_t(i)];
      const float inv = 1.0f / std::sqrt(ss / float(d) + eps);
      if (kind == RmsNormKind::kPlain && is_narrow(out.dtype)) {
        // Qwen3RMSNorm: the normalised value rounds before the weight multiply.
        for (int64_t i = 0; i < d; ++i)
          a[size_t(i)] = round_to(a[size_t(i)] * inv, out.dtype) * wf[size_t(i)];
      } else {
        for (int64_t i = 0; i < d; ++i) a[size_t(i)] = a[size_t(i)] * inv * wf[size_t(i)];
      }
      store_row(a.data(), d, out.dtype, out.row(r));
    }
  });
}

}  // namespace vt::cpu
