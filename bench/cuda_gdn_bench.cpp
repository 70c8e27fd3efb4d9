// CUDA Gated DeltaNet benchmarks (src/vt/cuda/gdn/).
//
// The chunked gated delta rule (vt::gated_delta_rule_chunked on CUDA: the tensor-core
// kernels cuda/gdn/chunk_wy_tc.cu + chunk_scan_tc.cu) at the Qwen3.5-9B GDN shape (Hk 16,
// Hv 32, Dk = Dv = 128; one layer) and the 27B shape (Hv 48): batch 1 at 512 and 4096
// tokens and 8 x 512. CUDA events around the op as the engine calls it (index upload
// included), median of 15 runs after 3 warm-ups, L2 warm, bf16 q, k, v and out, f32
// gates and state, q and k l2-normalised, g in (-0.7, -0.01).
//
// FLOPs per (chunk of C = 64, value head), Dk = Dv = 128, the products as the kernels run them:
//   chunk_wy   20 x 2 x 16 x 8 x Dk x 2  (K K^T and Q K^T on and below the diagonal, 16x8 tiles)
//            + 16 x (Dk + Dv) x (16 + 32 + 48) x 2  (the solve's off-diagonal blocks)
//            + 4 x 120 x (Dk + Dv) x 2  (its 16 x 16 diagonal blocks, CUDA cores)
//   chunk_scan Dv / 32 slices x [128 x 32 x Dk x 2  ([W; q] S)
//                              + 16 x 32 x (16 + 32 + 48 + 64) x 2  (P U' to the diagonal)
//                              + Dk x 32 x 64 x 2]  (the state update)
// ~9.3 MFLOP per (chunk, head). The fractions are of the H200's ~67 TFLOP/s f32 CUDA-core peak and
// ~395 TFLOP/s dense tf32 tensor-core peak; a 3xTF32 product issues three tf32 mma, so the tensor
// pipe's own load is three times the tf32 fraction printed.
//
// The fused decode step (vt::gdn_fused_recurrent: q/k l2norm, gates, the token
// recurrence and the gated RMSNorm in one kernel) next to the four launches it replaces
// (l2_normalize, gdn_gates, gated_delta_rule_recurrent, gated_rms_norm), batches 1, 8
// and 64 of one token each, Hk 16, Hv 32 and 48: a CUDA graph of 16 steps, each on its
// own state slots (so the state is cold in L2, as in a decode pass over 24 layers),
// median replay over 16. Bytes: the f32 state read and written (Hv x 128 x 128 x 4 x 2
// per request, most of it) plus the bf16 q, k, v, z rows read and y written; the rate
// is against the ~4.3 TB/s copy ceiling (bench/cuda_bench.h). At batch 1 the step is
// latency, not bandwidth.
//
// The conv of a prefill (vt::causal_conv1d_silu, T > B: the streaming kernel and the
// state roll) at one request of 512 and 4096 tokens, conv_dim 8192 (9B) and 10240 (27B:
// key 2048 x 2 + value 6144), K 4, bf16, x the mixed columns of the fused projection as
// the layer passes it, device indices. Bytes: x read and out written (the weights and
// the state rows are ~0.1%), against the same ~4.3 TB/s copy ceiling; median of 15
// eager calls. At 512 tokens x and out (17 MB) stay in the 50 MB L2 between calls, so
// that row may pass the DRAM ceiling; at 4096 (134 and 168 MB) they cannot.
//
// The recurrent op (vt::gated_delta_rule_recurrent) at decode, B = 1 .. 256 requests of one
// token, L2 cold (a decode step's state of one layer comes from HBM): the rows kernel
// and, tagged [warp], the warp kernel on the same call (KernelConfig::gdn_decode); and a
// 4096-token prefill by the token loop. Rows of bench/cuda_bench.h (the copy ceiling
// printed first).
//
//   cuda_gdn_bench [decode]   (needs a GPU; exits 0 with a note without one; decode: only
//                             the decode-step rows)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda_bench.h"
#include "vt/cuda/stream_state.h"
#include "vt/ops/copy.h"
#include "vt/ops/gdn.h"
#include "vt/ops/norm.h"
#include "vt/stream.h"

namespace {

constexpr double kF32TFlops = 67.0, kTf32TFlops = 395.0, kCopyTBs = 4.3;

vt::Stream g_cpu(vt::Device::cpu());

vt::Tensor up(vt::Stream& gpu, const vt::Tensor& t) { return vt::to_device(gpu, t, gpu.device()); }

vt::Tensor host_normal(const vt::Shape& shape, vt::DType dt, float scale, uint64_t seed) {
  vt::Tensor f = vt::Tensor::empty(shape, vt::DType::kF32);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = d(rng);
  return vt::to_dtype(g_cpu, f, dt);
}

vt::Tensor host_uniform(const vt::Shape& shape, float lo, float hi, uint64_t seed) {
  vt::Tensor f = vt::Tensor::empty(shape, vt::DType::kF32);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = d(rng);
  return f;
}

vt::Tensor i32(const std::vector<int32_t>& v) {
  vt::Tensor t = vt::Tensor::empty({int64_t(v.size())}, vt::DType::kI32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

double median_ms(vt::Stream& gpu, const std::function<void()>& fn) {
  cudaStream_t st = gpu.cuda_state().stream;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) fn();
  gpu.synchronize();
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    cudaEventRecord(a, st);
    fn();
    cudaEventRecord(b, st);
    cudaEventSynchronize(b);
    float m = 0;
    cudaEventElapsedTime(&m, a, b);
    ms.push_back(m);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// FLOPs per (chunk, value head), the header's formula.
double flops_per_chunk_head(double dk, double dv) {
  const double wy =
      20 * 2 * 16 * 8 * dk * 2 + 16 * (dk + dv) * (16 + 32 + 48) * 2 + 4 * 120 * (dk + dv) * 2;
  const double scan =
      dv / 32 * (128 * 32 * dk * 2 + 16 * 32 * (16 + 32 + 48 + 64) * 2 + dk * 32 * 64 * 2);
  return wy + scan;
}

void bench(vt::Stream& gpu, int64_t B, int64_t tokens_each, int64_t hv) {
  const int64_t hk = 16, d = 128, T = B * tokens_each;
  // q and k rows of norm ~1 (N(0, 1/128) per element), as the l2 norm leaves them.
  const vt::Tensor q = up(gpu, host_normal({T, hk, d}, vt::DType::kBF16, 0.088f, 1));
  const vt::Tensor k = up(gpu, host_normal({T, hk, d}, vt::DType::kBF16, 0.088f, 2));
  const vt::Tensor v = up(gpu, host_normal({T, hv, d}, vt::DType::kBF16, 1.0f, 3));
  const vt::Tensor g = up(gpu, host_uniform({T, hv}, -0.7f, -0.01f, 4));
  const vt::Tensor beta = up(gpu, host_uniform({T, hv}, 0.05f, 0.95f, 5));
  vt::Tensor state = up(gpu, host_normal({B, hv, d, d}, vt::DType::kF32, 0.1f, 6));
  vt::Tensor out = vt::Tensor::empty({T, hv, d}, vt::DType::kBF16, gpu.device());
  std::vector<int32_t> qsl{0}, slots;
  for (int64_t b = 0; b < B; ++b) {
    qsl.push_back(int32_t(qsl.back() + tokens_each));
    slots.push_back(int32_t(b));
  }
  const vt::Tensor qt = i32(qsl), st = i32(slots);
  const double ms = median_ms(gpu, [&] {
    vt::gated_delta_rule_chunked(gpu, q, k, v, g, beta, 0.088f, qt, state, st, out);
  });
  const double chunks = double(B * ((tokens_each + 63) / 64));
  const double tfs = chunks * double(hv) * flops_per_chunk_head(double(d), double(d)) / ms / 1e9;
  const std::string name = "gdn chunked B=" + std::to_string(B) +
                           " T=" + std::to_string(tokens_each) + " Hv=" + std::to_string(hv);
  std::printf("%-40s %9.3f ms/layer %8.1f TFLOP/s %6.1f%% of f32 67 %6.1f%% of tf32 395\n",
              name.c_str(), ms, tfs, 100.0 * tfs / kF32TFlops, 100.0 * tfs / kTf32TFlops);
}

// One decode step of the GDN layer from the conv output to out_proj's input, fused or as
// the four ops, `steps` times over disjoint state slots, timed as one graph replay.
void bench_decode(vt::Stream& gpu, int64_t B, int64_t hv, bool fused) {
  constexpr int64_t kSteps = 16;
  const int64_t hk = 16, d = 128, kd = hk * d, cd = 2 * kd + hv * d, vd = hv * d;
  const vt::DType bf16 = vt::DType::kBF16, f32 = vt::DType::kF32;
  const vt::Tensor act = up(gpu, host_normal({B, cd}, bf16, 1.0f, 11));
  const vt::Tensor proj = up(gpu, host_normal({B, vd + 2 * hv}, bf16, 2.0f, 12));
  const vt::Tensor alog = up(gpu, host_normal({hv}, bf16, 1.0f, 13));
  const vt::Tensor dtb = up(gpu, host_normal({hv}, bf16, 1.0f, 14));
  const vt::Tensor nw = up(gpu, host_normal({d}, bf16, 1.0f, 15));
  vt::Tensor state = vt::Tensor::empty({kSteps * B, hv, d, d}, f32, gpu.device());
  const vt::Tensor state0 = up(gpu, host_normal({B, hv, d, d}, f32, 0.1f, 16));
  for (int64_t i = 0; i < kSteps; ++i) {
    vt::Tensor block = state.slice(0, i * B, (i + 1) * B);
    vt::copy(gpu, state0, block);
  }
  std::vector<int32_t> qsl;
  for (int64_t b = 0; b <= B; ++b) qsl.push_back(int32_t(b));
  const vt::Tensor qsl_g = up(gpu, i32(qsl));
  std::vector<vt::Tensor> slots;  // step i: slots i B .. i B + B - 1
  for (int64_t i = 0; i < kSteps; ++i) {
    std::vector<int32_t> sl;
    for (int64_t b = 0; b < B; ++b) sl.push_back(int32_t(i * B + b));
    slots.push_back(up(gpu, i32(sl)));
  }
  const vt::Tensor q = act.slice(1, 0, kd).reshape({B, hk, d});
  const vt::Tensor k = act.slice(1, kd, 2 * kd).reshape({B, hk, d});
  const vt::Tensor qk = act.slice(1, 0, 2 * kd).reshape({B, 2 * hk, d});
  const vt::Tensor v = act.slice(1, 2 * kd, cd).reshape({B, hv, d});
  const vt::Tensor z = proj.slice(1, 0, vd).reshape({B, hv, d});
  const vt::Tensor bl = proj.slice(1, vd, vd + hv), al = proj.slice(1, vd + hv, vd + 2 * hv);
  vt::Tensor y = vt::Tensor::empty({B, hv, d}, bf16, gpu.device());
  const float scale = 1.0f / std::sqrt(float(d));
  const auto step = [&](const vt::Tensor& sl) {
    if (fused) {
      vt::gdn_fused_recurrent(gpu, q, k, v, z, al, bl, alog, dtb, bf16, scale, nw, 1e-6f, qsl_g,
                              state, sl, y);
      return;
    }
    vt::Tensor qkn = vt::Tensor::empty({B, 2 * hk, d}, f32, gpu.device());
    vt::l2_normalize(gpu, qk, 1e-6f, qkn);
    vt::Tensor g = vt::Tensor::empty({B, hv}, f32, gpu.device());
    vt::Tensor beta = vt::Tensor::empty({B, hv}, f32, gpu.device());
    vt::gdn_gates(gpu, al, bl, alog, dtb, bf16, g, beta);
    vt::Tensor o = vt::Tensor::empty({B, hv, d}, bf16, gpu.device());
    vt::gated_delta_rule_recurrent(gpu, qkn.slice(1, 0, hk), qkn.slice(1, hk, 2 * hk), v, g, beta,
                                   scale, qsl_g, state, sl, o);
    vt::gated_rms_norm(gpu, o, z, nw, 1e-6f, y);
  };
  step(slots[0]);  // warm-up: scratch sized before the capture
  gpu.synchronize();
  gpu.begin_capture();
  for (const vt::Tensor& sl : slots) step(sl);
  vt::cuda::GraphExecPtr graph = gpu.end_capture();
  const int64_t kernels = vt::Stream::graph_kernel_nodes(*graph) / kSteps;
  const double us = median_ms(gpu, [&] { gpu.replay(*graph); }) * 1e3 / double(kSteps);
  graph.reset();
  gpu.synchronize();
  vt::cuda::release_graph_pool(gpu.device().index);
  const double bytes = double(B) * double(hv * d * d) * 4 * 2 +
                       double(B) * double(2 * kd + 3 * vd) * 2;  // q, k, v, z read, y written
  const double gbs = bytes / us / 1e3;
  const std::string name = "gdn decode B=" + std::to_string(B) + " Hv=" + std::to_string(hv) +
                           (fused ? " [fused]" : " [4 ops]");
  std::printf("%-40s %9.2f us/layer %2lld kernels %8.1f GB/s %6.1f%% of copy 4.3 TB/s\n",
              name.c_str(), us, static_cast<long long>(kernels), gbs,
              100.0 * gbs / (kCopyTBs * 1000));
}

// One prefill conv of T tokens (one request) over C channels, K 4, bf16.
void bench_conv(vt::Stream& gpu, int64_t T, int64_t C, const char* model) {
  constexpr int64_t K = 4;
  const vt::DType bf16 = vt::DType::kBF16;
  // The fused projection's row: conv_dim, then z (the value width), b and a (Hv each).
  const int64_t hv = C == 8192 ? 32 : 48, width = C + hv * 128 + 2 * hv;
  const vt::Tensor proj = up(gpu, host_normal({T, width}, bf16, 1.0f, 21));
  const vt::Tensor x = proj.slice(1, 0, C);
  const vt::Tensor w = up(gpu, host_normal({C, K}, bf16, 0.5f, 22));
  vt::Tensor state = up(gpu, host_normal({1, K - 1, C}, vt::DType::kF32, 1.0f, 23));
  vt::Tensor out = vt::Tensor::empty({T, C}, bf16, gpu.device());
  const vt::Tensor qsl = up(gpu, i32({0, int32_t(T)})), slot = up(gpu, i32({0}));
  const double us =
      median_ms(gpu, [&] { vt::causal_conv1d_silu(gpu, x, w, qsl, state, slot, out); }) * 1e3;
  const double gbs = double(T * C) * 2 * 2 / us / 1e3;  // x read, out written
  const std::string name =
      "conv1d+silu T=" + std::to_string(T) + " C=" + std::to_string(C) + " [" + model + "]";
  std::printf("%-40s %9.2f us/layer %8.1f GB/s %6.1f%% of copy 4.3 TB/s\n", name.c_str(), us, gbs,
              100.0 * gbs / (kCopyTBs * 1000));
}

// The recurrent delta rule of B requests of tokens_each tokens (the token loop), FLOPs
// 4 Dk Dv per token and head. Bytes: q, k, v read, out written, the state read and
// written once.
void bench_recurrent(int64_t B, int64_t tokens_each, int64_t hk, int64_t hv,
                     const vt::Tensor* flush, const std::string& tag = "") {
  using vtbench::g_gpu;
  using vtbench::rand_gpu;
  const int64_t dk = 128, dv = 128, T = B * tokens_each;
  vt::Tensor q = rand_gpu({T, hk, dk}, vt::DType::kBF16, 0.09f),
             k = rand_gpu({T, hk, dk}, vt::DType::kBF16, 0.09f, 2);
  vt::Tensor v = rand_gpu({T, hv, dv}, vt::DType::kBF16, 1, 3),
             out = rand_gpu({T, hv, dv}, vt::DType::kBF16);
  vt::Tensor g = rand_gpu({T, hv}, vt::DType::kF32, 0.01f, 4),
             beta = rand_gpu({T, hv}, vt::DType::kF32, 0.1f, 5);
  vt::Tensor state = rand_gpu({B, hv, dk, dv}, vt::DType::kF32, 0.01f, 6);
  std::vector<int32_t> qsl{0}, slots;
  for (int64_t b = 0; b < B; ++b) {
    qsl.push_back(int32_t(qsl.back() + tokens_each));
    slots.push_back(int32_t(b));
  }
  vt::Tensor qt = i32(qsl), st = i32(slots);
  const double ms = vtbench::time_ms(
      [&] { vt::gated_delta_rule_recurrent(*g_gpu, q, k, v, g, beta, 0.088f, qt, state, st, out); },
      flush);
  const double bytes =
      double(B * hv * dk * dv) * 4 * 2 + double(T) * double(2 * hk * dk + 2 * hv * dv) * 2;
  const double flops = 4.0 * double(T * hv * dk * dv);
  vtbench::row("gdn recurrent B=" + std::to_string(B) + " tokens=" + std::to_string(tokens_each) +
                   " Hk/Hv=" + std::to_string(hk) + "/" + std::to_string(hv) + tag,
               ms, bytes, flops);
}

// Decode steps (L2 cold): the rows kernel and, tagged [warp], the warp kernel.
void bench_recurrent_decode() {
  const vt::Tensor flush = vtbench::l2_flush_buffer();
  for (int64_t B : {1, 8, 32, 64, 256}) {
    for (int64_t hv : {32, 48}) {
      bench_recurrent(B, 1, 16, hv, &flush);
      vtbench::with_kernels([](vt::KernelConfig& k) { k.gdn_decode = vt::GdnDecodeKernel::kWarp; },
                            [&] { bench_recurrent(B, 1, 16, hv, &flush, " [warp]"); });
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool only_decode = argc > 1 && std::string(argv[1]) == "decode";
  if (!vtbench::have_gpu("cuda_gdn_bench")) return 0;
  vt::Stream gpu(vt::Device::cuda(0));
  vtbench::use_gpu("cuda_gdn_bench", gpu);
  struct Case {
    int64_t B, tokens, hv;
  };
  if (!only_decode)
    for (const Case& s : {Case{1, 512, 32}, Case{1, 4096, 32}, Case{8, 512, 32}, Case{1, 512, 48},
                          Case{1, 4096, 48}, Case{8, 512, 48}})
      bench(gpu, s.B, s.tokens, s.hv);
  {
    // The [fused] decode rows time the kernel at every batch, past the op's measured rule.
    const vt::KernelConfig shipped = gpu.kernel_config();
    vt::KernelConfig fused_always = shipped;
    fused_always.gdn_fused = vt::Toggle::kOn;
    gpu.set_kernel_config(fused_always);
    for (int64_t hv : {32, 48})
      for (int64_t B : {1, 8, 16, 32, 48, 64})
        for (bool fused : {true, false}) bench_decode(gpu, B, hv, fused);
    gpu.set_kernel_config(shipped);
  }
  vtbench::header("op (Qwen3.5-9B / 3.6-27B GDN shapes)");
  vtbench::copy_ceiling_row();
  bench_recurrent_decode();
  if (only_decode) return 0;
  bench_recurrent(1, 4096, 16, 48, nullptr, " (prefill by the token loop)");
  bench_conv(gpu, 512, 8192, "9B");
  bench_conv(gpu, 4096, 8192, "9B");
  bench_conv(gpu, 4096, 10240, "27B");
  return 0;
}
