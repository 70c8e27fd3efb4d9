// CUDA add_rms_norm (vt/ops/norm.h): the residual add fused into the RMSNorm kernel of
// rms_norm_rows.cuh (kAdd): one block per row forms the rounded residual R(residual +
// delta), stores it, and normalises it. The residual equals the CPU's bit for bit; out
// matches it to f32 summation-order rounding (tests/vt/norm/cuda_add_rms_norm_test.cpp).
#include "vt/cuda/norm/add_rms_norm.h"
#include "vt/cuda/norm/rms_norm_rows.cuh"

namespace vt::cuda {

void add_rms_norm(Stream& s, const Rows& residual, const Rows& delta, const Tensor& w, float eps,
                  RmsNormKind kind, const Rows& out) {
  if (residual.rows == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const norm_detail::RmsNormRowsParams p{.x = rows_ref(residual),
                                         .delta = rows_ref(delta),
                                         .out = rows_ref(out),
                                         .w = w.data_ptr(),
                                         .w_dtype = w.dtype(),
                                         .cols = residual.cols,
                                         .eps = eps,
                                         .one_plus = kind == RmsNormKind::kOnePlus};
  norm_detail::launch_rms_norm_rows<true>(st, "add_rms_norm", p, residual.rows);
}

}  // namespace vt::cuda
