// CUDA GEMM benchmarks (vt::linear: cuBLASLt and the skinny kernel, src/vt/cuda/gemm/):
// prefill and decode projections at the Qwen3.5-27B and default text / 9B shapes, the
// skinny kernel's cluster splits, and the decode chains (a layer's GEMMs with the
// elementwise kernels between, as CUDA graphs) that set the skinny / PDL dispatch rule of
// vt/cuda/gemm.h. Timing, data and ceilings: bench/cuda_bench.h; the decode rows flush L2
// before each run (a decode step streams every weight from HBM once).
//
//   cuda_gemm_bench              every row (needs a GPU; exits 0 with a note without one)
//   cuda_gemm_bench decode-gemm  only the copy ceiling, the decode chains and the 9B-shape
//                                decode GEMM rows: the data for the rule (about a minute)
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cuda_bench.h"
#include "vt/cuda/gemm.h"
#include "vt/ops/activation.h"
#include "vt/ops/gemm.h"
#include "vt/ops/norm.h"

namespace {

using vtbench::g_gpu;
using vtbench::kCopyTBs;
using vtbench::l2_flush_buffer;
using vtbench::rand_gpu;
using vtbench::row;
using vtbench::time_ms;

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
  // The vision tower's fc1 (one 1024 x 1024 image: 4096 patches, 1152 -> 4304, bf16 bias):
  // linear then gelu against linear_gelu (cuBLASLt's GELU_BIAS epilogue).
  const int64_t m = 4096, k = 1152, n = 4304;
  vt::Tensor x = rand_gpu({m, k}, vt::DType::kBF16), w = rand_gpu({n, k}, vt::DType::kBF16, 0.03f);
  vt::Tensor bias = rand_gpu({n}, vt::DType::kBF16), out = rand_gpu({m, n}, vt::DType::kBF16);
  const double bytes = 2.0 * double(m * k + n * k + m * n), flops = 2.0 * double(m * n * k);
  row("tower fc1 linear + gelu M=4096 K=1152 N=4304", time_ms([&] {
        vt::linear(*g_gpu, x, w, out, bias);
        vt::gelu(*g_gpu, out, vt::GeluKind::kTanh, out);
      }),
      bytes, flops);
  row("tower fc1 linear_gelu M=4096 K=1152 N=4304",
      time_ms([&] { vt::linear_gelu(*g_gpu, x, w, bias, vt::GeluKind::kTanh, out); }), bytes,
      flops);
}

// Decode projections (bf16, L2 cold) at M = 1..64 through both CUDA paths, skinny
// (M <= 32 only) and cuBLASLt: the data for the rule in vt/cuda/gemm.h (skinny for
// N >= kSkinnyMinN at M <= kSkinnyMaxM). Default Qwen3.5 text (hidden 4096, 16 q / 4 kv heads of
// 256, GDN 16 k / 32 v heads of 128, MLP 12288, vocab 248320) and Qwen3.6-27B (hidden 5120, 24 q /
// 4 kv heads, GDN 16 k / 48 v heads, MLP 17408).
struct Proj {
  const char* name;
  int64_t k, n;
};

void bench_gemm_decode_rows(const std::vector<Proj>& projs) {
  const vt::Tensor flush = l2_flush_buffer();
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
  const vt::Tensor flush = l2_flush_buffer();
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
//   skinny         linear_skinny, plain launch      (VTLLM_PDL=0)
//   skinny+pdl     PDL, the ring's weights issued before griddepcontrol.wait
//   skinny+pdl+l2  PDL, ring + L2 prefetch of one more ring depth (VTLLM_PDL=auto,
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
  const vt::Tensor flush = l2_flush_buffer();
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
      "Switches: cublaslt = VTLLM_GEMM_SKINNY=0; skinny = VTLLM_PDL=0; skinny+pdl+l2 "
      "= VTLLM_PDL=auto (default); skinny+pdl has no switch (SkinnyPdl::kRing).\n"
      "Shipped rule (vt/cuda/gemm.h): skinny+pdl+l2 for N >= %lld at M <= %lld, cublaslt "
      "elsewhere.\n\n",
      static_cast<long long>(vt::cuda::kSkinnyMinN), static_cast<long long>(vt::cuda::kSkinnyMaxM));
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

}  // namespace

int main(int argc, char** argv) {
  const bool only_decode_gemm = argc > 1 && std::strcmp(argv[1], "decode-gemm") == 0;
  if (argc > 1 && !only_decode_gemm) {
    std::fprintf(stderr, "usage: cuda_gemm_bench [decode-gemm]\n");
    return 2;
  }
  if (!vtbench::have_gpu("cuda_gemm_bench")) return 0;
  vt::Stream gpu(vt::Device::cuda(0));
  vtbench::use_gpu("cuda_gemm_bench", gpu);
  vtbench::header("op (Qwen3.5-27B shapes unless noted)");
  vtbench::copy_ceiling_row();
  bench_decode_chains();
  bench_gemm_decode_9b();
  if (only_decode_gemm) return 0;
  bench_gemm();
  bench_gemm_decode();
  return 0;
}
