// CUDA attention benchmarks (src/vt/cuda/attention/): paged attention for decode steps
// (the tensor-core decode kernel and, tagged [cuda cores], the CUDA-core kernel it
// replaced for 16-bit operands, KernelConfig::attn_decode), as the decode graphs call it
// (bounds past the real context), prefill (the tensor-core flash kernel; an f32 out keeps
// the CUDA-core one), and the layer's preamble and KV-cache write. Shapes: Qwen3.6-27B
// (24 q / 4 kv heads of 256), the Qwen3.5 default text model (16 q / 4 kv heads of 256)
// and a Qwen3-style head_dim 128. Timing, data and ceilings: bench/cuda_bench.h; the
// decode rows flush L2 before each run (a decode step's KV cache of one layer comes from
// HBM: the previous layer evicted it), the prefill rows run warm.
//
//   cuda_attention_bench   (needs a GPU; exits 0 with a note without one)
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda_bench.h"
#include "vt/ops/attention.h"
#include "vt/ops/attn_preamble.h"

namespace {

using vtbench::g_gpu;
using vtbench::i32;
using vtbench::rand_gpu;
using vtbench::row;
using vtbench::time_ms;

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

// Decode steps (L2 cold) at the 27B shapes, the Qwen3-style D 128 row and the default
// text shape: the decode kernel (paged_decode) and, tagged [cuda cores], the CUDA-core
// kernel on the same call (KernelConfig::attn_decode = kCudaCores). Bytes: every key and
// value read once (bf16), q and out.
void bench_decode() {
  const vt::Tensor flush = vtbench::l2_flush_buffer();
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
    vtbench::with_kernels(
        [](vt::KernelConfig& k) { k.attn_decode = vt::AttnDecodeKernel::kCudaCores; },
        [&] {
          bench_attention(a.B, a.ctx, 1, a.hq, a.hkv, a.d, vt::DType::kBF16, 0, " [cuda cores]");
        });
  }
  // As the engine's decode graphs call it: bounds {B, 1, 16384} over a shorter context
  // (the grid follows the bound, each request's split count its real context).
  for (int64_t B : {1, 8, 64}) {
    bench_attention(B, 512, 1, 16, 4, 256, vt::DType::kBF16, 0, "", 16384);
    bench_attention(B, 4096, 1, 16, 4, 256, vt::DType::kBF16, 0, "", 16384);
  }
  bench_attention_preamble();
  g_flush = nullptr;
}

}  // namespace

int main() {
  if (!vtbench::have_gpu("cuda_attention_bench")) return 0;
  vt::Stream gpu(vt::Device::cuda(0));
  vtbench::use_gpu("cuda_attention_bench", gpu);
  vtbench::header("op (Qwen3.5-27B shapes unless noted)");
  vtbench::copy_ceiling_row();
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
  // Decode through the tensor-core prefill kernel (request 0 has 2 tokens), next to the
  // decode rows above: data for the decode rule.
  bench_attention(64, 4096, 1, 24, 4, 256, vt::DType::kBF16, 1);
  bench_attention(1, 32768, 1, 24, 4, 256, vt::DType::kBF16, 1);
  bench_attention(64, 4096, 1, 16, 4, 256, vt::DType::kBF16, 1);
  return 0;
}
