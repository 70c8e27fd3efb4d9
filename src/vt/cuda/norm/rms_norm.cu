// CUDA RMSNorm (vt/ops/norm.h) through the kernel of rms_norm_rows.cuh: one block per
// row, f32 sum of squares, one rounding at the output (kPlain with a narrow out: also
// before the weight multiply). Matches the CPU reference to f32 summation-order rounding
// (tests/vt/norm/cuda_norm_test.cpp).
#include "vt/cuda/norm.h"
#include "vt/cuda/norm/rms_norm_rows.cuh"

namespace vt::cuda {

void rms_norm(Stream& s, const Rows& x, const Tensor& w, float eps, RmsNormKind kind,
              const Rows& out) {
  if (x.rows == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const norm_detail::RmsNormRowsParams p{.x = rows_ref(x),
                                         .out = rows_ref(out),
                                         .w = w.data_ptr(),
                                         .w_dtype = w.dtype(),
                                         .cols = x.cols,
                                         .eps = eps,
                                         .one_plus = kind == RmsNormKind::kOnePlus};
  norm_detail::launch_rms_norm_rows<false>(st, "rms_norm", p, x.rows);
}

}  // namespace vt::cuda
