// CUDA kernel benchmarks: each op at a Qwen3.5-27B shape, timed with CUDA events
// around the op as the engine calls it (index uploads included), median of 15 runs
// after warm-up, on random (never zero) data. Prints the bytes or FLOPs counted
// before writing the kernel, the achieved rate, and the fraction of the H200
// ceilings measured on this workplace's machine: ~4.3 TB/s copy (read + write), ~790
// TFLOP/s dense bf16 (~67 TFLOP/s f32 on CUDA cores, the datasheet's, for the rows
// that say so). The first rows re-measure the copy ceiling in this run.
//
//   cuda_kernels_bench              every row (needs a GPU; exits 0 with a note without one)
//   cuda_kernels_bench decode-gemm  only the copy ceiling, the decode chains and the
//                                   9B-shape decode GEMM rows: the data for the skinny /
//                                   PDL dispatch rule of vt/cuda/gemm.h (about a minute)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "vt/cuda/api.h"
#include "vt/cuda/gemm.h"
#include "vt/cuda/stream_state.h"
#include "vt/ops/activation.h"
#include "vt/ops/attention.h"
#include "vt/ops/attn_preamble.h"
#include "vt/ops/copy.h"
#include "vt/ops/embedding.h"
#include "vt/ops/gdn.h"
#include "vt/ops/gemm.h"
#include "vt/ops/norm.h"
#include "vt/ops/sampling.h"
#include "vt/stream.h"

namespace {

constexpr double kCopyTBs = 4.3, kBf16TFlops = 790.0, kF32TFlops = 67.0;

vt::Stream* g_gpu = nullptr;
vt::Stream g_cpu(vt::Device::cpu());

// Random normals on the GPU: 16M values drawn once on the host, scaled, rotated by
// `seed`, uploaded, and tiled over larger tensors by device copies (so big tensors
// cost no host time; the period, 32 MiB of bf16, is far from zero and past L2).
vt::Tensor rand_gpu(const vt::Shape& shape, vt::DType dt, float scale = 1.0f, uint64_t seed = 1) {
  static std::vector<float> pool = [] {
    std::vector<float> v(size_t(1) << 24);
    std::mt19937_64 rng(42);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (float& x : v) x = d(rng);
    return v;
  }();
  const int64_t n = vt::shape_numel(shape), chunk = std::min<int64_t>(n, int64_t(pool.size()));
  vt::Tensor f = vt::Tensor::empty({chunk}, vt::DType::kF32);
  for (int64_t i = 0; i < chunk; ++i)
    f.data<float>()[i] = scale * pool[size_t((i + int64_t(seed) * 7919) % int64_t(pool.size()))];
  vt::Tensor piece = vt::to_device(*g_gpu, vt::to_dtype(g_cpu, f, dt), g_gpu->device());
  vt::Tensor out = vt::Tensor::empty({n}, dt, g_gpu->device());
  for (int64_t at = 0; at < n; at += chunk) {
    const int64_t len = std::min(chunk, n - at);
    vt::Tensor dst = out.slice(0, at, at + len);
    vt::copy(*g_gpu, piece.slice(0, 0, len), dst);
  }
  return out.view(shape);
}

// Median milliseconds of fn over 15 event-timed runs after 3 warm-ups. With `flush`,
// L2 is flushed before each run (a memset of it outside the timed events): a decode step
// streams every weight from HBM once, so warm-L2 timings would flatter the small
// projections.
double time_ms(const std::function<void()>& fn, const vt::Tensor* flush = nullptr) {
  cudaStream_t st = g_gpu->cuda_state().stream;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) fn();
  g_gpu->synchronize();
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    if (flush) cudaMemsetAsync(flush->data_ptr(), i, flush->nbytes(), st);
    cudaEventRecord(a, st);
    fn();
    cudaEventRecord(b, st);
    cudaEventSynchronize(b);
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// `tflops_ceiling`: the FLOP/s ceiling the row's fraction is of (bf16 tensor cores unless
// the row says otherwise).
void row(const std::string& name, double ms, double bytes, double flops,
         double tflops_ceiling = kBf16TFlops) {
  const double gbs = bytes / ms / 1e6, tfs = flops / ms / 1e9;
  std::printf("%-58s %9.3f ms %8.0f GB/s %5.1f%% %8.1f TFLOP/s %5.1f%%\n", name.c_str(), ms, gbs,
              100.0 * gbs / (kCopyTBs * 1000), tfs, 100.0 * tfs / tflops_ceiling);
}

vt::Tensor i32(const std::vector<int32_t>& v) {
  vt::Tensor t = vt::Tensor::empty({int64_t(v.size())}, vt::DType::kI32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

// The single-row kernels of a 9B-shape decode step (hidden 4096, 16 q/k and 32 v heads
// of 128, vocabulary 151936), warm L2: what they cost is latency (launch and memory round
// trips), so the bandwidth column is far below the ceiling by nature; it shows how far.
void bench_decode_rowwise() {
  const int64_t hidden = 4096, vocab = 151936;
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
  {
    vt::Tensor table = rand_gpu({vocab, hidden}, vt::DType::kBF16);
    vt::Tensor out = rand_gpu({1, hidden}, vt::DType::kBF16);
    vt::Tensor ids = vt::Tensor::empty({1}, vt::DType::kI32, g_gpu->device());
    vt::Tensor host_id = i32({123456});
    vt::copy(*g_gpu, host_id, ids);
    row("embedding bf16 [1, 4096] (device id)",
        time_ms([&] { vt::embedding(*g_gpu, table, ids, out); }), 2.0 * double(hidden) * 2, 0);
  }
  // Greedy sampling's pick: bf16 logits as the lm_head writes them.
  for (int64_t rows : {int64_t(1), int64_t(8), int64_t(64)})
    for (vt::DType dt : {vt::DType::kBF16, vt::DType::kF32}) {
      if (dt == vt::DType::kF32 && rows != 64) continue;
      vt::Tensor logits = rand_gpu({rows, vocab}, dt);
      vt::Tensor ids = vt::Tensor::empty({rows}, vt::DType::kI32, g_gpu->device());
      row(std::string("argmax ") + vt::dtype_name(dt) + " [" + std::to_string(rows) + ", 151936]",
          time_ms([&] { vt::argmax(*g_gpu, logits, ids); }),
          double(rows * vocab) * double(vt::dtype_size(dt)), 0);
    }
}

void bench_copy_and_rowwise() {
  const int64_t n = int64_t(1) << 29;  // 1 GiB of bf16
  vt::Tensor a = rand_gpu({n}, vt::DType::kBF16), b = rand_gpu({n}, vt::DType::kBF16, 1, 2);
  row("copy bf16 1 GiB (cudaMemcpyAsync: the ceiling)", time_ms([&] { vt::copy(*g_gpu, a, b); }),
      2.0 * double(n) * 2, 0);
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
  bench_decode_rowwise();
  vt::Tensor gu = rand_gpu({4096, 2 * 17408}, vt::DType::kBF16),
             h = rand_gpu({4096, 17408}, vt::DType::kBF16);
  row("silu_and_mul bf16 [4096, 2 x 17408]", time_ms([&] { vt::silu_and_mul(*g_gpu, gu, h); }),
      3.0 * 4096 * 17408 * 2, 0);
}

void bench_gemm() {
  struct Shape {
    int64_t m, k, n;
  };
  for (Shape s : {Shape{1, 5120, 12288}, Shape{64, 5120, 12288}, Shape{4096, 5120, 12288},
                  Shape{4096, 17408, 5120}, Shape{8192, 8192, 8192}}) {
    vt::Tensor x = rand_gpu({s.m, s.k}, vt::DType::kBF16),
               w = rand_gpu({s.n, s.k}, vt::DType::kBF16, 0.02f);
    vt::Tensor out = rand_gpu({s.m, s.n}, vt::DType::kBF16);
    const double bytes = 2.0 * double(s.m * s.k + s.n * s.k + s.m * s.n);
    row("linear bf16 M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) +
            " N=" + std::to_string(s.n),
        time_ms([&] { vt::linear(*g_gpu, x, w, out); }), bytes, 2.0 * double(s.m * s.n * s.k));
  }
}

// Decode projections (bf16, L2 cold) at M = 1..64 through both CUDA paths, skinny
// (M <= 32 only) and cuBLASLt: the data for the rule in vt/cuda/gemm.h (skinny for
// N >= kSkinnyMinN at M <= kSkinnyMaxM). Default Qwen3.5 text (hidden 4096, 16 q / 4 kv heads of 256, GDN 16 k /
// 32 v heads of 128, MLP 12288, vocab 248320) and Qwen3.6-27B (hidden 5120, 24 q / 4 kv
// heads, GDN 16 k / 48 v heads, MLP 17408).
struct Proj {
  const char* name;
  int64_t k, n;
};

void bench_gemm_decode_rows(const std::vector<Proj>& projs) {
  const vt::Tensor flush = vt::Tensor::empty({int64_t(256) << 20}, vt::DType::kU8, g_gpu->device());
  for (const Proj& p : projs) {
    vt::Tensor w = rand_gpu({p.n, p.k}, vt::DType::kBF16, 0.02f, 3);
    for (int64_t m : {1, 4, 8, 16, 32, 64}) {
      vt::Tensor x = rand_gpu({m, p.k}, vt::DType::kBF16, 1.0f, 4);
      vt::Tensor out = rand_gpu({m, p.n}, vt::DType::kBF16, 1.0f, 5);
      const double bytes = 2.0 * double(m * p.k + p.n * p.k + m * p.n);
      const std::string name = std::string("decode ") + p.name + " M=" + std::to_string(m) +
                               " K=" + std::to_string(p.k) + " N=" + std::to_string(p.n);
      if (vt::cuda::skinny_supports(x, w, out))
        row(name + " skinny",
            time_ms(
                [&] {
                  vt::cuda::linear_skinny(*g_gpu, x, w, {}, out, 0, vt::cuda::SkinnyPdl::kOff);
                },
                &flush),
            bytes, 2.0 * double(m * p.n * p.k));
      row(name + " cublaslt",
          time_ms([&] { vt::cuda::linear_cublaslt(*g_gpu, x, w, {}, out); }, &flush), bytes,
          2.0 * double(m * p.n * p.k));
    }
  }
}

void bench_gemm_decode() {
  const std::vector<Proj> projs = {
      {"3.5 q_proj", 4096, 8192},       {"3.5 k/v_proj", 4096, 1024},
      {"3.5 o/out_proj,z", 4096, 4096}, {"3.5 in_proj_qkv", 4096, 8192},
      {"3.5 in_proj_b/a", 4096, 32},    {"3.5 gate_up", 4096, 24576},
      {"3.5 down", 12288, 4096},        {"3.5 lm_head", 4096, 248320},
      {"27B q_proj", 5120, 12288},      {"27B k/v_proj", 5120, 1024},
      {"27B o/out_proj", 6144, 5120},   {"27B in_proj_qkv", 5120, 10240},
      {"27B in_proj_z", 5120, 6144},    {"27B in_proj_b/a", 5120, 48},
      {"27B gate_up", 5120, 34816},     {"27B down", 17408, 5120},
      {"27B lm_head", 5120, 248320},
  };
  bench_gemm_decode_rows(projs);
  const vt::Tensor flush = vt::Tensor::empty({int64_t(256) << 20}, vt::DType::kU8, g_gpu->device());
  // The skinny kernel's cluster split forced to 1/2/4/8 at M = 1 (the rule's choice is the
  // "skinny" row above): the data for cluster_split in gemm/skinny.cu.
  for (const Proj& p : {projs[1], projs[2], projs[5], projs[8], projs[10], projs[15]}) {
    vt::Tensor w = rand_gpu({p.n, p.k}, vt::DType::kBF16, 0.02f, 3);
    vt::Tensor x = rand_gpu({1, p.k}, vt::DType::kBF16, 1.0f, 4);
    vt::Tensor out = rand_gpu({1, p.n}, vt::DType::kBF16, 1.0f, 5);
    for (int split : {1, 2, 4, 8})
      row(std::string("decode ") + p.name + " M=1 skinny split=" + std::to_string(split),
          time_ms(
              [&] {
                vt::cuda::linear_skinny(*g_gpu, x, w, {}, out, split, vt::cuda::SkinnyPdl::kOff);
              },
              &flush),
          2.0 * double(p.k + p.n * p.k + p.n), 2.0 * double(p.n * p.k));
  }
}

// ---- Decode chains: the data for the skinny / PDL rule (vt/cuda/gemm.h).
//
// The weight GEMMs of a batch-M decode step as the engine's CUDA graph runs them: each
// GEMM preceded by a small elementwise kernel that produces its input (rms_norm or
// silu_and_mul, not PDL-aware: what the model has today), captured once per variant and
// replayed (L2 flushed before each replay, outside the timed events). Variants:
//   cublaslt       linear_cublaslt                  (VTLLM_GEMM_SKINNY=0)
//   skinny         linear_skinny, plain launch      (VTLLM_GEMM_PDL=0)
//   skinny+pdl     PDL, the ring's weights issued before griddepcontrol.wait
//   skinny+pdl+l2  PDL, ring + L2 prefetch of one more ring depth (VTLLM_GEMM_PDL=1,
//                  the default)
// Shapes: the 9B Qwen3.5 text model (hidden 4096, MLP 12288, vocab 151936), with the
// fused input projections that are coming (GDN in_proj 12352 rows, attention qkv 10240).
// Bytes: each GEMM's weights, x and out once (the elementwise kernels' few KB not
// counted); "% of 4.3" is of the copy ceiling (a pure read streams a few % faster).
enum class Variant { kCublasLt, kSkinny, kSkinnyPdl, kSkinnyPdlL2 };
constexpr Variant kVariants[] = {Variant::kCublasLt, Variant::kSkinny, Variant::kSkinnyPdl,
                                 Variant::kSkinnyPdlL2};
const char* variant_name(Variant v) {
  switch (v) {
    case Variant::kCublasLt:
      return "cublaslt";
    case Variant::kSkinny:
      return "skinny";
    case Variant::kSkinnyPdl:
      return "skinny+pdl";
    default:
      return "skinny+pdl+l2";
  }
}

void gemm_as(Variant v, const vt::Tensor& x, const vt::Tensor& w, const vt::Tensor& out) {
  using vt::cuda::SkinnyPdl;
  switch (v) {
    case Variant::kCublasLt:
      return vt::cuda::linear_cublaslt(*g_gpu, x, w, {}, out);
    case Variant::kSkinny:
      return vt::cuda::linear_skinny(*g_gpu, x, w, {}, out, 0, SkinnyPdl::kOff);
    case Variant::kSkinnyPdl:
      return vt::cuda::linear_skinny(*g_gpu, x, w, {}, out, 0, SkinnyPdl::kRing);
    default:
      return vt::cuda::linear_skinny(*g_gpu, x, w, {}, out, 0, SkinnyPdl::kRingL2);
  }
}

// One step of a chain: an elementwise kernel writing the GEMM's x, then the GEMM.
// kind: 0 rms_norm(src -> x) (src may be a column slice of an earlier output),
// 1 silu_and_mul(src -> x), 2 none (x is a slice of an earlier output).
struct ChainStep {
  int kind;
  vt::Tensor src, x, w, out;
  vt::Tensor norm_w;  // kind 0: [x.size(1)]
};

struct Chain {
  std::string name;
  std::vector<ChainStep> steps;
  double bytes = 0;
  int64_t gemms = 0;
};

// The rms_norm weights, one per width (cleared at the end of bench_decode_chains: device
// memory must not outlive the stream).
std::map<int64_t, vt::Tensor> g_norm_weights;
const vt::Tensor& norm_weight(int64_t d) {
  auto it = g_norm_weights.find(d);
  if (it == g_norm_weights.end())
    it = g_norm_weights.emplace(d, rand_gpu({d}, vt::DType::kBF16, 0.1f, 9)).first;
  return it->second;
}

void add_step(Chain& c, int kind, const vt::Tensor& src, const vt::Tensor& x, const vt::Tensor& w,
              const vt::Tensor& out) {
  c.steps.push_back({kind, src, x, w, out, kind == 0 ? norm_weight(x.size(1)) : vt::Tensor()});
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  c.bytes += 2.0 * double(m * k + n * k + m * n);
  ++c.gemms;
}

void run_chain(const Chain& c, Variant v, bool gemms) {
  for (const ChainStep& s : c.steps) {
    vt::Tensor x = s.x;
    if (s.kind == 0) vt::rms_norm(*g_gpu, s.src, s.norm_w, 1e-6f, vt::RmsNormKind::kOnePlus, x);
    if (s.kind == 1) vt::silu_and_mul(*g_gpu, s.src, x);
    if (gemms) gemm_as(v, s.x, s.w, s.out);
  }
}

// Median microseconds of one replay of the chain captured as a graph (L2 flushed).
double time_chain_us(const Chain& c, Variant v, const vt::Tensor& flush, bool gemms = true) {
  run_chain(c, v, gemms);  // warm-up: plans, function attributes
  g_gpu->synchronize();
  g_gpu->begin_capture();
  run_chain(c, v, gemms);
  vt::cuda::GraphExecPtr g = g_gpu->end_capture();
  const double ms = time_ms([&] { g_gpu->replay(*g); }, &flush);
  g.reset();
  g_gpu->synchronize();
  return ms * 1e3;
}

void bench_decode_chains() {
  constexpr int64_t kH = 4096, kI = 12288, kVocab = 151936, kGdnIn = 12352, kQkv = 10240;
  const vt::Tensor flush = vt::Tensor::empty({int64_t(256) << 20}, vt::DType::kU8, g_gpu->device());
  auto weight = [](int64_t n, int64_t k, uint64_t seed) {
    return rand_gpu({n, k}, vt::DType::kBF16, 0.02f, seed);
  };
  // One GDN layer and one attention layer: distinct weights, 856 MB, far past L2.
  const vt::Tensor w_in = weight(kGdnIn, kH, 11), w_out = weight(kH, kH, 12),
                   w_gu1 = weight(2 * kI, kH, 13), w_dn1 = weight(kH, kI, 14),
                   w_qkv = weight(kQkv, kH, 15), w_o = weight(kH, kH, 16),
                   w_gu2 = weight(2 * kI, kH, 17), w_dn2 = weight(kH, kI, 18);
  // Per-shape chains: 4 GEMMs of one shape on distinct weights (2 for lm_head).
  struct Shape {
    const char* name;
    int64_t n, k, copies;
  };
  const Shape shapes[] = {
      {"gdn in_proj 12352x4096", kGdnIn, kH, 4}, {"out/o_proj 4096x4096", kH, kH, 4},
      {"gate_up 24576x4096", 2 * kI, kH, 4},     {"down 4096x12288", kH, kI, 4},
      {"attn qkv 10240x4096", kQkv, kH, 4},      {"lm_head 151936x4096", kVocab, kH, 2}};
  std::vector<std::vector<vt::Tensor>> shape_w;
  for (const Shape& sh : shapes) {
    shape_w.emplace_back();
    for (int64_t i = 0; i < sh.copies; ++i) shape_w.back().push_back(weight(sh.n, sh.k, 20 + i));
  }
  std::printf("\n%-58s %12s %13s %6s\n", "decode chain (9B shape, CUDA graph, L2 cold)", "median",
              "bytes/time", "of 4.3");
  // verdicts[M] lines, printed together at the end.
  std::vector<std::string> verdicts;
  for (int64_t m : {1, 8, 16, 32, 64}) {
    auto act = [&](int64_t cols, uint64_t seed) {
      return rand_gpu({m, cols}, vt::DType::kBF16, 1.0f, seed);
    };
    const vt::Tensor h = act(kH, 40);
    // The layer chain (GDN then attention), each x made from the previous output.
    Chain layers{"gdn + attention layer (8 GEMMs, rms_norm/silu between)", {}};
    {
      vt::Tensor a1 = act(kH, 41), p1 = act(kGdnIn, 42), a2 = act(kH, 43), p2 = act(kH, 44),
                 a3 = act(kH, 45), p3 = act(2 * kI, 46), a4 = act(kI, 47), p4 = act(kH, 48),
                 a5 = act(kH, 49), p5 = act(kQkv, 50), a6 = act(kH, 51), p6 = act(kH, 52),
                 a7 = act(kH, 53), p7 = act(2 * kI, 54), a8 = act(kI, 55), p8 = act(kH, 56);
      add_step(layers, 0, h, a1, w_in, p1);                    // input norm -> in_proj
      add_step(layers, 0, p1.slice(1, 0, kH), a2, w_out, p2);  // (conv, delta rule) -> out_proj
      add_step(layers, 0, p2, a3, w_gu1, p3);                  // post norm -> gate_up
      add_step(layers, 1, p3, a4, w_dn1, p4);                  // silu_and_mul -> down
      add_step(layers, 0, p4, a5, w_qkv, p5);                  // input norm -> qkv
      add_step(layers, 0, p5.slice(1, 0, kH), a6, w_o, p6);    // (attention) -> o_proj
      add_step(layers, 0, p6, a7, w_gu2, p7);                  // post norm -> gate_up
      add_step(layers, 1, p7, a8, w_dn2, p8);                  // silu_and_mul -> down
    }
    // The same GEMMs back to back, x a slice of the previous output: what PDL gives once
    // the kernels between the GEMMs trigger their dependents early too.
    Chain direct{"the same 8 GEMMs back to back (no kernel between)", {}};
    for (size_t i = 0; i < layers.steps.size(); ++i) {
      const ChainStep& s = layers.steps[i];
      const vt::Tensor x = i == 0 ? h : layers.steps[i - 1].out.slice(1, 0, s.w.size(1));
      add_step(direct, 2, {}, x, s.w, s.out);
    }
    std::vector<Chain> chains = {layers, direct};
    for (size_t i = 0; i < std::size(shapes); ++i) {
      const Shape& sh = shapes[i];
      Chain c{std::string("4 x ") + sh.name, {}};
      if (sh.copies != 4) c.name = std::to_string(sh.copies) + " x " + sh.name;
      const vt::Tensor src = act(sh.k, 60 + i), x = act(sh.k, 61 + i), out = act(sh.n, 62 + i);
      for (const vt::Tensor& w : shape_w[i]) add_step(c, 0, src, x, w, out);
      chains.push_back(c);
    }
    for (const Chain& c : chains) {
      const bool skinny_ok = vt::cuda::skinny_supports(c.steps[0].x, c.steps[0].w, c.steps[0].out);
      double best = 1e30, cublas = 0;
      std::string best_name, line;
      for (Variant v : kVariants) {
        if (v != Variant::kCublasLt && !skinny_ok) continue;
        const double us = time_chain_us(c, v, flush);
        const std::string name =
            "chain M=" + std::to_string(m) + " " + c.name + " " + variant_name(v);
        const double gbs = c.bytes / us / 1e3;
        std::printf("%-86s %9.1f us %8.0f GB/s %5.1f%%  %6.1f us/GEMM\n", name.c_str(), us, gbs,
                    100.0 * gbs / (kCopyTBs * 1000), us / double(c.gemms));
        if (v == Variant::kCublasLt) cublas = us;
        if (us < best) best = us, best_name = variant_name(v);
        char buf[64];
        std::snprintf(buf, sizeof buf, " %s %.1f", variant_name(v), us);
        line += buf;
      }
      if (c.steps[0].kind != 2) {  // the elementwise kernels alone, for subtraction
        const double us = time_chain_us(c, Variant::kCublasLt, flush, false);
        std::printf("%-86s %9.1f us\n",
                    ("chain M=" + std::to_string(m) + " " + c.name + " elementwise only").c_str(),
                    us);
      }
      char head[160];
      std::snprintf(head, sizeof head, "verdict M=%-2lld %-56s fastest %-13s (%.2fx cublaslt) |",
                    static_cast<long long>(m), c.name.c_str(), best_name.c_str(), cublas / best);
      verdicts.push_back(std::string(head) + line + " us");
    }
    vt::cuda::release_graph_pool(0);
  }
  std::printf(
      "\nDecode GEMM rule verdicts (chain microseconds; the fastest variant per M and "
      "chain):\n");
  for (const std::string& v : verdicts) std::printf("%s\n", v.c_str());
  std::printf(
      "Switches: cublaslt = VTLLM_GEMM_SKINNY=0; skinny = VTLLM_GEMM_PDL=0; skinny+pdl+l2 "
      "= VTLLM_GEMM_PDL=1 (default); skinny+pdl has no switch (SkinnyPdl::kRing).\n"
      "Shipped rule (vt/cuda/gemm.h): skinny+pdl+l2 for N >= %lld at M <= %lld, cublaslt "
      "elsewhere.\n\n",
      static_cast<long long>(vt::cuda::kSkinnyMinN),
      static_cast<long long>(vt::cuda::kSkinnyMaxM));
  g_norm_weights.clear();
}

// The 9B-shape projections one at a time (L2 cold): the single-GEMM rows of the rule.
void bench_gemm_decode_9b() {
  bench_gemm_decode_rows({{"9B gdn in_proj", 4096, 12352},
                          {"9B o/out_proj", 4096, 4096},
                          {"9B gate_up", 4096, 24576},
                          {"9B down", 12288, 4096},
                          {"9B attn qkv", 4096, 10240},
                          {"9B lm_head", 4096, 151936}});
}

// The decode rows run with L2 flushed before each run (a decode step's KV cache and GDN
// state of one layer come from HBM: the previous layer's evicted them); the others warm.
const vt::Tensor* g_flush = nullptr;  // set while the decode rows run
double timed(const std::function<void()>& fn) { return time_ms(fn, g_flush); }

// Paged attention over B requests of ctx cached keys and q_len new tokens each. With
// bf16 out and q_len > 1 the step takes the tensor-core kernel (vt/cuda/attention.h);
// an f32 out keeps the CUDA-core kernel (the "before" of the prefill rows). q0_extra
// more tokens for request 0 (a decode batch with one q_len-2 request takes the
// tensor-core kernel: how it would serve decode, next to the CUDA-core row).
void bench_attention(int64_t B, int64_t ctx, int64_t q_len, int64_t hq, int64_t hkv, int64_t d,
                     vt::DType out_dt = vt::DType::kBF16, int64_t q0_extra = 0,
                     const std::string& tag = "", int64_t bound_seq = 0) {
  const int64_t bs = 16, per_req = (ctx + q_len + q0_extra + bs - 1) / bs, blocks = B * per_req;
  vt::Tensor kc = rand_gpu({blocks, bs, hkv, d}, vt::DType::kBF16);
  vt::Tensor vc = rand_gpu({blocks, bs, hkv, d}, vt::DType::kBF16, 1, 3);
  std::vector<int32_t> perm(static_cast<size_t>(blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(7));
  vt::Tensor bt = vt::Tensor::empty({B, per_req}, vt::DType::kI32);
  std::copy(perm.begin(), perm.end(), bt.data<int32_t>());
  std::vector<int32_t> qsl{0}, lens;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = q_len + (b == 0 ? q0_extra : 0);
    qsl.push_back(int32_t(qsl.back() + n));
    lens.push_back(int32_t(ctx + n));
  }
  const int64_t T = B * q_len + q0_extra;
  vt::Tensor q = rand_gpu({T, hq, d}, vt::DType::kBF16), out = rand_gpu({T, hq, d}, out_dt);
  vt::Tensor qt = i32(qsl), lt = i32(lens);
  // bound_seq: the call as a decode graph makes it (bounds {B, 1, bound_seq}: the split
  // count follows the bound, not the real context).
  const vt::AttentionBounds bounds =
      bound_seq > 0 ? vt::AttentionBounds{B, 1, bound_seq} : vt::AttentionBounds{};
  const double ms = timed([&] {
    vt::paged_attention(*g_gpu, q, kc, vc, qt, lt, bt, 1.0f / std::sqrt(float(d)), out, bounds);
  });
  // Fewest bytes: every cached key and value read once, q read and out written once.
  const double kv_bytes = double(B * (ctx + q_len) + q0_extra) * double(hkv * d) * 2 * 2;
  const double bytes = kv_bytes + 2.0 * double(T * hq * d) * 2;
  // FLOPs: q.k and p.v, 2 each per (query, visible key, dim).
  double pairs = 0;
  for (int64_t j = 0; j < q_len; ++j) pairs += double(ctx + j + 1);
  pairs *= double(B);
  for (int64_t j = q_len; j < q_len + q0_extra; ++j) pairs += double(ctx + j + 1);
  const double flops = 4.0 * pairs * double(hq * d);
  row("paged_attention B=" + std::to_string(B) + " ctx=" + std::to_string(ctx) +
          " q=" + std::to_string(q_len) + (q0_extra ? "(+" + std::to_string(q0_extra) + ")" : "") +
          " Hq/Hkv=" + std::to_string(hq) + "/" + std::to_string(hkv) + " D=" + std::to_string(d) +
          (out_dt != vt::DType::kBF16 ? " f32 out (CUDA cores)"
                                      : (q_len + q0_extra > 1 ? " mma" : "")) +
          (bound_seq > 0 ? " bound " + std::to_string(bound_seq) : "") + tag,
      ms, bytes, flops);
}

// The GDN delta rule of B requests of tokens_each tokens. recurrent: the token loop
// (decode), FLOPs 4 Dk Dv per token and head. chunked: the two kernels of
// cuda/gdn/delta_rule_chunked.cuh, FLOPs per (chunk of 64, head) as they run them:
// chunk_wy 2 x 64^2 Dk x 2 (K K^T, Q K^T) + 64 x 63 / 2 x (Dk + Dv) x 2 (the solve);
// chunk_scan 128 Dk Dv x 2 ([W; q] S) + 288 x 8 Dv x 2 (P U', to the warp's diagonal
// block) + 64 Dk Dv x 2 (the state update); their fraction is of the ~67 TFLOP/s f32
// CUDA-core peak. Bytes: q, k, v read, out written, the state read and written once
// (the chunked form's scratch traffic, ~80 KB per chunk and head, not counted).
void bench_gdn(int64_t B, int64_t tokens_each, int64_t hk, int64_t hv, bool chunked,
               const std::string& tag = "") {
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
  const double ms = timed([&] {
    if (chunked)
      vt::gated_delta_rule_chunked(*g_gpu, q, k, v, g, beta, 0.088f, qt, state, st, out);
    else
      vt::gated_delta_rule_recurrent(*g_gpu, q, k, v, g, beta, 0.088f, qt, state, st, out);
  });
  const double bytes =
      double(B * hv * dk * dv) * 4 * 2 + double(T) * double(2 * hk * dk + 2 * hv * dv) * 2;
  const double chunks = double(B * ((tokens_each + 63) / 64)), c = 64;
  const double per_chunk_head = 2 * c * c * dk * 2 + c * (c - 1) / 2 * (dk + dv) * 2 +
                                2 * c * dk * dv * 2 + 288.0 * 8 * dv * 2 + c * dk * dv * 2;
  const double flops =
      chunked ? chunks * double(hv) * per_chunk_head : 4.0 * double(T * hv * dk * dv);
  row(std::string(chunked ? "gdn chunked" : "gdn recurrent") + " B=" + std::to_string(B) +
          " tokens=" + std::to_string(tokens_each) + " Hk/Hv=" + std::to_string(hk) + "/" +
          std::to_string(hv) + (chunked ? " (% of f32 67)" : "") + tag,
      ms, bytes, flops, chunked ? kF32TFlops : kBf16TFlops);
}

// The per-layer kernels around decode attention at the 9B shape (16 gated q heads, 4 kv
// heads of 256, rotary 64, bf16), L2 cold as in a decode step: the preamble (q/k norm,
// rope, gate) and the KV-cache write at 1 and 8 tokens. Bytes: qg and k read, q, k and
// gate written, the two norm weights and the cos/sin rows; k and v read and written once
// for the cache write. At these sizes the time is latency, not bandwidth: the column
// shows how far from the copy rate.
void bench_attention_preamble() {
  const int64_t hq = 16, hkv = 4, d = 256, rotary = 64;
  vt::Tensor qw = rand_gpu({d}, vt::DType::kBF16), kw = rand_gpu({d}, vt::DType::kBF16, 1, 2);
  for (int64_t T : {int64_t(1), int64_t(8)}) {
    vt::Tensor qg = rand_gpu({T, hq * 2 * d}, vt::DType::kBF16);
    vt::Tensor k = rand_gpu({T, hkv * d}, vt::DType::kBF16, 1, 3);
    vt::Tensor cs = rand_gpu({T, rotary}, vt::DType::kF32, 1, 4);
    vt::Tensor q = rand_gpu({T, hq, d}, vt::DType::kBF16),
               ko = rand_gpu({T, hkv, d}, vt::DType::kBF16);
    vt::Tensor gate = rand_gpu({T, hq, d}, vt::DType::kBF16);
    const double preamble_bytes = double(T) * double(hq * 2 * d + hkv * d) * 2 * 2 +
                                  double(T * rotary) * 4 + 2.0 * double(d) * 2;
    row("attn preamble T=" + std::to_string(T) + " 16 gated q / 4 kv heads of 256", timed([&] {
          vt::attn_qk_norm_rope_gate(*g_gpu, qg, k, qw, kw, 1e-6f, vt::RmsNormKind::kOnePlus, cs, q,
                                     ko, gate);
        }),
        preamble_bytes, 0);
    const int64_t blocks = 64, bs = 16;
    vt::Tensor kc = rand_gpu({blocks, bs, hkv, d}, vt::DType::kBF16);
    vt::Tensor vc = rand_gpu({blocks, bs, hkv, d}, vt::DType::kBF16, 1, 2);
    vt::Tensor v = rand_gpu({T, hkv, d}, vt::DType::kBF16, 1, 5);
    std::vector<int64_t> slot_values;
    for (int64_t t = 0; t < T; ++t) slot_values.push_back(t * 37 + 5);
    vt::Tensor slots_host = vt::Tensor::empty({T}, vt::DType::kI64);
    std::copy(slot_values.begin(), slot_values.end(), slots_host.data<int64_t>());
    vt::Tensor slots = vt::Tensor::empty({T}, vt::DType::kI64, g_gpu->device());
    vt::copy(*g_gpu, slots_host, slots);  // device slots, as the decode graph passes them
    row("kv_cache_write T=" + std::to_string(T) + " 4 kv heads of 256 (device slots)",
        timed([&] { vt::kv_cache_write(*g_gpu, ko, v, slots, kc, vc); }),
        double(T * hkv * d) * 2 * 2 * 2, 0);
    // The two in one kernel, as the attention layer runs them (VT_FUSE_ATTN_PREAMBLE=1):
    // compare with the sum of the two rows above.
    row("attn preamble + cache write folded T=" + std::to_string(T), timed([&] {
          vt::attn_qk_norm_rope_gate(*g_gpu, qg, k, qw, kw, 1e-6f, vt::RmsNormKind::kOnePlus, cs, q,
                                     ko, gate, {v, slots, kc, vc});
        }),
        preamble_bytes + double(T * hkv * d) * 2 * 3, 0);
  }
}

// Runs fn with the environment variable name set to value (the decode kernels' A/B
// switches, read per call: VTLLM_ATTN_DECODE, VTLLM_GDN_DECODE), then unsets it.
void with_env(const char* name, const char* value, const std::function<void()>& fn) {
  setenv(name, value, 1);
  fn();
  unsetenv(name);
}

// Decode steps (L2 cold): the decode kernels (paged_decode, delta_rule_rows_kernel) and, tagged
// [old], the kernels they replace, at the 27B shapes, the Qwen3-style D 128 row, and
// the Qwen3.5 default text shape (16 q / 4 kv heads of 256; GDN 16 k / 32 v heads).
// Bytes: every key and value read once (bf16), q and out; GDN: the f32 state read and
// written once.
void bench_decode() {
  const vt::Tensor flush = vt::Tensor::empty({int64_t(256) << 20}, vt::DType::kU8, g_gpu->device());
  g_flush = &flush;
  struct Attn {
    int64_t B, ctx, hq, hkv, d;
  };
  const Attn attn[] = {{64, 4096, 24, 4, 256}, {1, 32768, 24, 4, 256}, {8, 8192, 32, 8, 128},
                       {1, 512, 16, 4, 256},   {8, 512, 16, 4, 256},   {32, 512, 16, 4, 256},
                       {64, 512, 16, 4, 256},  {1, 4096, 16, 4, 256},  {8, 4096, 16, 4, 256},
                       {32, 4096, 16, 4, 256}, {64, 4096, 16, 4, 256}};
  for (const Attn& a : attn) {
    bench_attention(a.B, a.ctx, 1, a.hq, a.hkv, a.d);
    with_env("VTLLM_ATTN_DECODE", "cuda_cores", [&] {
      bench_attention(a.B, a.ctx, 1, a.hq, a.hkv, a.d, vt::DType::kBF16, 0, " [old]");
    });
  }
  // As the engine's decode graphs call it: bounds {B, 1, 16384} over a shorter context
  // (the grid follows the bound, each request's split count its real context).
  for (int64_t B : {1, 8, 64}) {
    bench_attention(B, 512, 1, 16, 4, 256, vt::DType::kBF16, 0, "", 16384);
    bench_attention(B, 4096, 1, 16, 4, 256, vt::DType::kBF16, 0, "", 16384);
  }
  bench_attention_preamble();
  for (int64_t B : {1, 8, 32, 64, 256}) {
    for (int64_t hv : {32, 48}) {
      bench_gdn(B, 1, 16, hv, false);
      with_env("VTLLM_GDN_DECODE", "warp", [&] { bench_gdn(B, 1, 16, hv, false, " [old]"); });
    }
  }
  g_flush = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const bool only_decode_gemm = argc > 1 && std::strcmp(argv[1], "decode-gemm") == 0;
  if (argc > 1 && !only_decode_gemm) {
    std::fprintf(stderr, "usage: cuda_kernels_bench [decode-gemm]\n");
    return 2;
  }
  if (vt::cuda_device_count() == 0) {
    std::printf("cuda_kernels_bench: no CUDA device, nothing measured\n");
    return 0;
  }
  vt::Stream gpu(vt::Device::cuda(0));
  g_gpu = &gpu;
  std::printf("%-58s %12s %13s %6s %15s %6s\n", "op (Qwen3.5-27B shapes unless noted)", "median",
              "bytes/time", "of 4.3", "flops/time", "of 790");
  bench_copy_and_rowwise();
  bench_decode_chains();
  bench_gemm_decode_9b();
  if (only_decode_gemm) return 0;
  bench_gemm();
  bench_gemm_decode();
  bench_decode();
  bench_attention(1, 0, 4096, 24, 4, 256);  // prefill of a 4K prompt
  // Prefill at the Qwen3.5 default text shape (16 query heads on 4 kv heads, D 256);
  // FLOPs count causal pairs only: 4 Hq D sum over queries of keys attended.
  bench_attention(1, 0, 512, 16, 4, 256);
  bench_attention(1, 0, 4096, 16, 4, 256);
  bench_attention(8, 0, 512, 16, 4, 256);
  bench_attention(1, 4096, 512, 16, 4, 256);  // a chunk after a 4K prefix
  bench_attention(1, 0, 4096, 32, 8, 128);    // Qwen3-style head_dim 128
  bench_attention(1, 0, 4096, 16, 4, 256, vt::DType::kF32);
  // Decode through the tensor-core kernel (request 0 has 2 tokens), next to the rows
  // above and the CUDA-core decode at the default shape: data for the decode rule.
  bench_attention(64, 4096, 1, 24, 4, 256, vt::DType::kBF16, 1);
  bench_attention(1, 32768, 1, 24, 4, 256, vt::DType::kBF16, 1);
  bench_attention(64, 4096, 1, 16, 4, 256, vt::DType::kBF16, 1);
  bench_gdn(1, 4096, 16, 48, false);  // prefill by the token loop (the old path)
  for (int64_t hv : {32, 48}) {       // prefill by chunks: 35B (Hv 32), 27B (Hv 48)
    bench_gdn(1, 512, 16, hv, true);
    bench_gdn(1, 4096, 16, hv, true);
    bench_gdn(8, 512, 16, hv, true);
  }
  return 0;
}
