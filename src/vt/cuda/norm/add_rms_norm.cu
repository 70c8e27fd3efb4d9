// CUDA add_rms_norm (vt/ops/norm.h): one block per row. Pass 1 forms the rounded
// residual R(residual + delta) in f32, stores it and sums its squares in f32
// (per-thread partials, a warp-shuffle and shared-memory tree); pass 2 re-reads the
// thread's own residual elements (its own writes: no barrier needed) and normalises
// with rms_norm's rounding points (vt/cuda/norm/rms_norm.cu). The residual equals the
// CPU's bit for bit; out matches it to f32 summation-order rounding
// (tests/vt/cuda_add_rms_norm_test.cpp).
#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/norm/add_rms_norm.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kThreads = 256;

struct AddRmsNormParams {
  RowsRef residual, delta, out;  // rows through RowsRef::row(), as every row kernel
  const void* w;
  DType w_dtype;
  int64_t cols;
  float eps;
  bool one_plus;
};

__global__ void __launch_bounds__(kThreads) add_rms_norm_kernel(AddRmsNormParams p) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t row = blockIdx.x;
  void* res = p.residual.row(row);
  const void* delta = p.delta.row(row);
  void* out = p.out.row(row);
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < p.cols; i += kThreads) {
    // The residual stream rounds every add (qwen3_5.md §4); the norm reads the rounded value.
    const float v = round_to(load_f32(res, p.residual.dtype, i) + load_f32(delta, p.delta.dtype, i),
                             p.residual.dtype);
    store_f32(res, p.residual.dtype, i, v);
    ss += v * v;
  }
  __shared__ float red[kThreads / kWarp];
  const float inv = rsqrtf(block_sum<kThreads>(ss, red) / float(p.cols) + p.eps);
  const bool plain_narrow = !p.one_plus && p.out.dtype != DType::kF32;
  for (int64_t i = threadIdx.x; i < p.cols; i += kThreads) {
    float w = load_f32(p.w, p.w_dtype, i);
    if (p.one_plus) w += 1.0f;
    float v = load_f32(res, p.residual.dtype, i) * inv;
    // Qwen3RMSNorm (kPlain) with a narrow out: the normalised value rounds before the weight.
    if (plain_narrow) v = round_to(v, p.out.dtype);
    store_f32(out, p.out.dtype, i, v * w);
  }
}

}  // namespace

void add_rms_norm(Stream& s, const Rows& residual, const Rows& delta, const Tensor& w, float eps,
                  RmsNormKind kind, const Rows& out) {
  if (residual.rows == 0) return;
  VT_CHECK(residual.rows <= int64_t(0x7fffffff), "add_rms_norm (CUDA): ", residual.rows,
           " rows exceed the grid limit");
  StreamState& st = s.cuda_state();
  set_device(st);
  const AddRmsNormParams p{
      rows_ref(residual), rows_ref(delta), rows_ref(out), w.data_ptr(),
      w.dtype(),          residual.cols,   eps,           kind == RmsNormKind::kOnePlus};
  launch_kernel(st, "add_rms_norm_kernel", add_rms_norm_kernel, dim3(unsigned(residual.rows)),
                dim3(kThreads), 0, p);
}

}  // namespace vt::cuda
