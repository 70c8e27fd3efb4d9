// CUDA l2_normalize (GDN q/k) and gated RMSNorm (GDN output): one warp per row, which
// suits their short rows (head_dim 128); f32 sums (per-lane partials, then a shuffle
// tree) and the CPU reference's rounding points (vt/ops/norm.h, vt/ops/gdn.h). Rows of
// one or two levels (RowsRef): the GDN layer normalises all q and k heads of a column
// slice of the conv output in one launch.
#include <algorithm>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/norm.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;

// gated == false: out = x / sqrt(sum(x^2) + eps).
// gated == true:  out = x / sqrt(mean(x^2) + eps) * w * silu(z).
template <bool kGated>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
    row_norm_kernel(RowsRef x, RowsRef z, const void* w, DType wdt, RowsRef out, int64_t rows,
                    int64_t cols, float eps) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp; r < rows;
       r += int64_t(gridDim.x) * kWarpsPerBlock) {
    const char* xr = x.row(r);
    float ss = 0.0f;
    for (int64_t i = lane; i < cols; i += kWarp) {
      const float v = load_f32(xr, x.dtype, i);
      ss += v * v;
    }
    ss = warp_sum(ss);
    const float inv = kGated ? rsqrtf(ss / float(cols) + eps) : rsqrtf(ss + eps);
    char* o = out.row(r);
    const char* zr = kGated ? z.row(r) : nullptr;
    for (int64_t i = lane; i < cols; i += kWarp) {
      float v = load_f32(xr, x.dtype, i) * inv;
      if constexpr (kGated) {
        const float zi = load_f32(zr, z.dtype, i);
        // Narrow out: the normalised value and its product with w round, then the f32
        // silu(z) gate (vt/ops/gdn.h); f32 out: one rounding-free product.
        if (out.dtype != DType::kF32)
          v = round_to(round_to(v, out.dtype) * load_f32(w, wdt, i), out.dtype) * siluf(zi);
        else
          v = v * load_f32(w, wdt, i) * siluf(zi);
      }
      store_f32(o, out.dtype, i, v);
    }
  }
}

template <bool kGated>
void launch(Stream& s, const RowsRef& x, const RowsRef& z, const void* w, DType wdt,
            const RowsRef& out, int64_t rows, int64_t cols, float eps) {
  if (rows == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const int64_t blocks = std::min<int64_t>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock, 1 << 20);
  launch_kernel(st, "row_norm_kernel", row_norm_kernel<kGated>, dim3(unsigned(blocks)),
                dim3(kWarpsPerBlock * kWarp), 0, x, z, w, wdt, out, rows, cols, eps);
}

}  // namespace

void l2_normalize(Stream& s, const Rows& x, float eps, const Rows& out) {
  launch<false>(s, rows_ref(x), rows_ref(x), nullptr, DType::kF32, rows_ref(out), x.rows, x.cols,
                eps);
}

void gated_rms_norm(Stream& s, const Rows& x, const Rows& z, const Tensor& w, float eps,
                    const Rows& out) {
  launch<true>(s, rows_ref(x), rows_ref(z), w.data_ptr(), w.dtype(), rows_ref(out), x.rows, x.cols,
               eps);
}

}  // namespace vt::cuda
