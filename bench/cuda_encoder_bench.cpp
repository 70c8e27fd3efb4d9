// CUDA encoder-op benchmarks (src/vt/cuda/encoder/) at the Qwen3.5 vision tower's shapes
// (width 1152, 16 heads of 72, MLP 4304, merger 4608, a 2304-row position table): one
// 1024 x 1024 image (N = 4096 patches, one segment), 16 images of 512 x 512 (16 segments
// of 1024) and, for attention, 16 images of 1024 x 1024 (16 segments of 4096).
// Row ops against the copy ceiling (bytes read + written), attention against the bf16
// tensor-core ceiling (4 N_seg^2 head_dim heads flops per segment, the unpadded 72).
// The arms are called as the op entry points call them (vt/cuda/encoder.h: index
// uploads included); timing, data and ceilings: bench/cuda_bench.h.
//
//   cuda_encoder_bench   (needs a GPU; exits 0 with a note without one)
#include <string>
#include <vector>

#include "cuda_bench.h"
#include "vt/cuda/encoder.h"
#include "vt/ops/args.h"

namespace {

using vtbench::g_gpu;
using vtbench::rand_gpu;
using vtbench::row;
using vtbench::time_ms;

constexpr int64_t kWidth = 1152, kHeads = 16, kHeadDim = 72, kMlp = 4304, kTable = 2304;

vt::Rows rows(const vt::Tensor& t) { return vt::rows_view(t, "bench", "x"); }

void bench_rows(int64_t n) {
  const std::string tokens = std::to_string(n);
  vt::Tensor x = rand_gpu({n, kWidth}, vt::DType::kBF16),
             y = rand_gpu({n, kWidth}, vt::DType::kBF16);
  vt::Tensor w = rand_gpu({kWidth}, vt::DType::kBF16),
             b = rand_gpu({kWidth}, vt::DType::kBF16, 0.5, 2);
  row("layer_norm bf16 [" + tokens + ", 1152]",
      time_ms([&] { vt::cuda::layer_norm(*g_gpu, rows(x), w, b, 1e-6f, rows(y)); }),
      2.0 * double(n * kWidth) * 2, 0);
  {
    // The residual step: h and r read, h and the normalised row written. h grows by r each
    // repeat; LayerNorm does not care.
    vt::Tensor r = rand_gpu({n, kWidth}, vt::DType::kBF16, 0.01, 3);
    row("add_layer_norm bf16 [" + tokens + ", 1152]",
        time_ms([&] { vt::cuda::add_layer_norm(*g_gpu, rows(x), rows(r), w, b, 1e-6f, rows(y)); }),
        4.0 * double(n * kWidth) * 2, 0);
  }
  {
    vt::Tensor h = rand_gpu({n, kMlp}, vt::DType::kBF16), o = rand_gpu({n, kMlp}, vt::DType::kBF16);
    row("gelu tanh bf16 [" + tokens + ", 4304]",
        time_ms([&] { vt::cuda::gelu(*g_gpu, rows(h), vt::GeluKind::kTanh, rows(o)); }),
        2.0 * double(n * kMlp) * 2, 0);
  }
  {
    const int64_t m = n / 4, d = 4 * kWidth;  // the merger: 2 x 2 patches per row
    vt::Tensor h = rand_gpu({m, d}, vt::DType::kBF16), o = rand_gpu({m, d}, vt::DType::kBF16);
    row("gelu erf bf16 [" + std::to_string(m) + ", 4608]",
        time_ms([&] { vt::cuda::gelu(*g_gpu, rows(h), vt::GeluKind::kErf, rows(o)); }),
        2.0 * double(m * d) * 2, 0);
  }
  {
    vt::Tensor table = rand_gpu({kTable, kWidth}, vt::DType::kBF16);
    std::vector<int32_t> idx(size_t(n * 4));
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t((i * 2654435761u) % kTable);
    vt::Tensor idx_g = vt::to_device(*g_gpu, vtbench::i32(idx), g_gpu->device()).view({n, 4});
    vt::Tensor wt = rand_gpu({n, 4}, vt::DType::kF32);
    vt::Tensor o = rand_gpu({n, kWidth}, vt::DType::kBF16);
    // The table (5.3 MB) stays in L2: bytes are the output and the indices and weights.
    row("weighted_gather bf16 [2304, 1152] x 4 taps -> [" + tokens + ", 1152]",
        time_ms([&] { vt::cuda::weighted_gather(*g_gpu, rows(table), idx_g, wt, o); }),
        double(n * kWidth) * 2 + double(n * 4) * 8, 0);
  }
}

void bench_attention(int64_t segments, int64_t seg_len) {
  const int64_t n = segments * seg_len, W = 3 * kHeads * kHeadDim;
  vt::Tensor qkv = rand_gpu({n, W}, vt::DType::kBF16);
  vt::Tensor out = rand_gpu({n, kHeads, kHeadDim}, vt::DType::kBF16);
  auto part = [&](int i) {
    const vt::Tensor t = qkv.slice(1, i * kHeads * kHeadDim, (i + 1) * kHeads * kHeadDim)
                             .reshape({n, kHeads, kHeadDim});
    return vt::cuda::HeadsArg{t.data_ptr(), t.dtype(), t.stride(0), t.stride(1)};
  };
  const vt::cuda::HeadsArg q = part(0), k = part(1), v = part(2),
                           o{out.data_ptr(), out.dtype(), out.stride(0), out.stride(1)};
  std::vector<int32_t> cu{0};
  for (int64_t i = 0; i < segments; ++i) cu.push_back(int32_t((i + 1) * seg_len));
  const double flops = 4.0 * double(segments) * double(seg_len * seg_len) * kHeadDim * kHeads;
  const double bytes = 4.0 * double(n * kHeads * kHeadDim) * 2;  // q, k, v read once, out written
  for (vt::DType dt : {vt::DType::kBF16}) {
    row("segment_attention " + std::string(vt::dtype_name(dt)) + " " + std::to_string(segments) +
            " x " + std::to_string(seg_len) + " tokens, 16 heads of 72 (qkv views)",
        time_ms([&] {
          vt::cuda::segment_attention(*g_gpu, q, k, v, n, kHeads, kHeadDim, cu, 0.11785113f, o);
        }),
        bytes, flops);
  }
}

}  // namespace

int main() {
  if (!vtbench::have_gpu("cuda_encoder_bench")) return 0;
  vt::Stream gpu(vt::Device::cuda(0));
  vtbench::use_gpu("cuda_encoder_bench", gpu);
  vtbench::header("op (Qwen3.5 vision tower shapes)");
  vtbench::copy_ceiling_row();
  bench_rows(4096);
  bench_rows(16 * 1024);
  bench_attention(1, 4096);
  bench_attention(16, 1024);
  bench_attention(16, 4096);
  return 0;
}
