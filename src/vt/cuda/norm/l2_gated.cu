// CUDA l2_normalize (GDN q/k) and gated RMSNorm (GDN output): one warp per row, which
// suits their short rows (head_dim 128), held in registers; f32 sums (per-lane
// partials, then a shuffle tree) and the CPU reference's rounding points (vt/ops/norm.h,
// vt/ops/gdn.h). Rows of one or two levels (RowsRef): the GDN layer normalises all q
// and k heads of a column slice of the conv output in one launch.
#include <algorithm>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/norm.h"
#include "vt/cuda/row_chunks.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;

constexpr int kHeadVec = 4;  // a lane's chunk: a 128-element head row is one span of a warp

// gated == false: out = x / sqrt(sum(x^2) + eps).
// gated == true:  out = x / sqrt(mean(x^2) + eps) * w * silu(z).
// A warp holds a row of up to 128 elements in registers (vt/cuda/row_chunks.cuh): every
// load of the row (gated: z and w too) is issued before the reduction and the stores;
// longer rows go span by span and re-read x in pass 2. The scalar layout keeps the
// lane-strided order of the sums (lane l: l, l + 32, ...), which gdn_fused_recurrent
// (cuda/gdn/fused_recurrent.cu) repeats to equal these launches bit for bit.
template <bool kGated>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
    row_norm_kernel(RowsRef x, RowsRef z, const void* w, DType wdt, RowsRef out, int64_t rows,
                    int64_t cols, float eps) {
  constexpr bool vec = false;  // the scalar layout: the summation order above
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int lane = int(threadIdx.x) % kWarp;
  const int64_t span = int64_t(kHeadVec) * kWarp;
  const bool held = cols <= span;  // the whole row sits in one span
  for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp; r < rows;
       r += int64_t(gridDim.x) * kWarpsPerBlock) {
    const char* xr = x.row(r);
    const char* zr = kGated ? z.row(r) : nullptr;
    char* o = out.row(r);
    float v[1][kHeadVec], zv[1][kHeadVec], wv[1][kHeadVec];
    float ss = 0.0f;
    for (int64_t base = 0; base < cols; base += span) {
      load_span(xr, x.dtype, vec, base, cols, lane, kWarp, v);
      if (kGated && held) {
        load_span(zr, z.dtype, vec, 0, cols, lane, kWarp, zv);
        load_span(w, wdt, vec, 0, cols, lane, kWarp, wv);
      }
#pragma unroll
      for (int j = 0; j < kHeadVec; ++j) ss += v[0][j] * v[0][j];
    }
    ss = warp_sum(ss);
    const float inv = kGated ? rsqrtf(ss / float(cols) + eps) : rsqrtf(ss + eps);
    for (int64_t base = 0; base < cols; base += span) {
      if (!held) {
        load_span(xr, x.dtype, vec, base, cols, lane, kWarp, v);
        if constexpr (kGated) {
          load_span(zr, z.dtype, vec, base, cols, lane, kWarp, zv);
          load_span(w, wdt, vec, base, cols, lane, kWarp, wv);
        }
      }
#pragma unroll
      for (int j = 0; j < kHeadVec; ++j) {
        float y = v[0][j] * inv;
        if constexpr (kGated) {
          // Narrow out: the normalised value and its product with w round, then the f32
          // silu(z) gate (vt/ops/gdn.h); f32 out: one rounding-free product.
          if (out.dtype != DType::kF32)
            y = round_to(round_to(y, out.dtype) * wv[0][j], out.dtype) * siluf(zv[0][j]);
          else
            y = y * wv[0][j] * siluf(zv[0][j]);
        }
        v[0][j] = y;
      }
      store_span(o, out.dtype, vec, base, cols, lane, kWarp, v);
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
