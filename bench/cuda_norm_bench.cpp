// CUDA norm benchmarks (src/vt/cuda/norm/): rms_norm, the decoder's add_rms_norm, the GDN
// layer's per-head l2_normalize and gated_rms_norm, at prefill sizes (Qwen3.6-27B width
// 5120, 4096 tokens) against the copy ceiling, and at decode sizes (the 9B / default text
// width 4096, 1 to 64 rows), warm L2: what those cost is latency (launch and memory round
// trips), so their bandwidth column is far below the ceiling by nature; it shows how far.
// Timing, data and ceilings: bench/cuda_bench.h.
//
//   cuda_norm_bench   (needs a GPU; exits 0 with a note without one)
#include <string>

#include "cuda_bench.h"
#include "vt/ops/gdn.h"
#include "vt/ops/norm.h"

namespace {

using vtbench::g_gpu;
using vtbench::rand_gpu;
using vtbench::row;
using vtbench::time_ms;

void bench_prefill_norms() {
  vt::Tensor x = rand_gpu({4096, 5120}, vt::DType::kBF16), w = rand_gpu({5120}, vt::DType::kBF16);
  vt::Tensor y = rand_gpu({4096, 5120}, vt::DType::kBF16);
  row("rms_norm bf16 [4096, 5120]",
      time_ms([&] { vt::rms_norm(*g_gpu, x, w, 1e-6f, vt::RmsNormKind::kOnePlus, y); }),
      2.0 * 4096 * 5120 * 2, 0);
  // The decoder's residual add + norm (one pass: read residual and delta, write both).
  // The decode rows (1 and 64 rows of the 9B width) show the fixed cost of a launch.
  for (int64_t rows : {int64_t(4096), int64_t(64), int64_t(1)}) {
    const int64_t cols = rows == 4096 ? 5120 : 4096;
    vt::Tensor res = rand_gpu({rows, cols}, vt::DType::kBF16),
               d = rand_gpu({rows, cols}, vt::DType::kBF16, 1, 3);
    vt::Tensor o = rand_gpu({rows, cols}, vt::DType::kBF16),
               wn = rand_gpu({cols}, vt::DType::kBF16);
    row("add_rms_norm bf16 [" + std::to_string(rows) + ", " + std::to_string(cols) + "]",
        time_ms([&] { vt::add_rms_norm(*g_gpu, res, d, wn, 1e-6f, vt::RmsNormKind::kOnePlus, o); }),
        4.0 * double(rows * cols) * 2, 0);
  }
  // The GDN layer's q/k l2 norm: one launch over a [T, 2 Hk, Dk] per-head view of the
  // conv output's column slice (two-level rows), f32 out.
  {
    const int64_t T = 4096, hk = 16, dk = 128, conv_dim = 2 * hk * dk + 32 * 128;
    vt::Tensor act = rand_gpu({T, conv_dim}, vt::DType::kBF16);
    vt::Tensor qk = vt::Tensor::empty({T, 2 * hk, dk}, vt::DType::kF32, g_gpu->device());
    const vt::Tensor view = act.slice(1, 0, 2 * hk * dk).reshape({T, 2 * hk, dk});
    row("l2_normalize bf16 [4096, 32, 128] heads of a column slice -> f32",
        time_ms([&] { vt::l2_normalize(*g_gpu, view, 1e-6f, qk); }),
        double(T * 2 * hk * dk) * (2 + 4), 0);
  }
}

// The single-row norms of a 9B-shape decode step (hidden 4096, 16 q/k and 32 v heads of
// 128).
void bench_decode_norms() {
  const int64_t hidden = 4096;
  vt::Tensor wn = rand_gpu({hidden}, vt::DType::kBF16);
  for (int64_t rows : {int64_t(1), int64_t(8)}) {
    vt::Tensor x = rand_gpu({rows, hidden}, vt::DType::kBF16),
               y = rand_gpu({rows, hidden}, vt::DType::kBF16, 1, 2);
    row("rms_norm bf16 [" + std::to_string(rows) + ", 4096]",
        time_ms([&] { vt::rms_norm(*g_gpu, x, wn, 1e-6f, vt::RmsNormKind::kOnePlus, y); }),
        2.0 * double(rows * hidden) * 2 + double(hidden) * 2, 0);
  }
  {  // GDN q/k: 32 heads of a column slice of the conv output, f32 out
    const int64_t conv_dim = 2 * 16 * 128 + 32 * 128;
    vt::Tensor act = rand_gpu({1, conv_dim}, vt::DType::kBF16);
    vt::Tensor qk = vt::Tensor::empty({1, 32, 128}, vt::DType::kF32, g_gpu->device());
    const vt::Tensor view = act.slice(1, 0, 32 * 128).reshape({1, 32, 128});
    row("l2_normalize bf16 [1, 32, 128] heads of a column slice -> f32",
        time_ms([&] { vt::l2_normalize(*g_gpu, view, 1e-6f, qk); }), 32.0 * 128 * (2 + 4), 0);
  }
  {  // GDN output norm: o and the z heads of the projection, bf16 out
    vt::Tensor o = rand_gpu({1, 32, 128}, vt::DType::kBF16),
               z = rand_gpu({1, 32, 128}, vt::DType::kBF16, 1, 2);
    vt::Tensor gw = rand_gpu({128}, vt::DType::kBF16),
               out = rand_gpu({1, 32, 128}, vt::DType::kBF16);
    row("gated_rms_norm bf16 [1, 32, 128]",
        time_ms([&] { vt::gated_rms_norm(*g_gpu, o, z, gw, 1e-6f, out); }), 3.0 * 32 * 128 * 2, 0);
  }
}

}  // namespace

int main() {
  if (!vtbench::have_gpu("cuda_norm_bench")) return 0;
  vt::Stream gpu(vt::Device::cuda(0));
  vtbench::use_gpu("cuda_norm_bench", gpu);
  vtbench::header("op (Qwen3.6-27B / 9B shapes)");
  vtbench::copy_ceiling_row();
  bench_prefill_norms();
  bench_decode_norms();
  return 0;
}
