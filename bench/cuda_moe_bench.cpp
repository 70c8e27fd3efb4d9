// CUDA MoE benchmarks (src/vt/cuda/moe/) at the Qwen3.6-35B-A3B expert shape: H 2048,
// E 256, k 8, I 512, bf16 (one layer's experts: 1.5 GiB of weights, past L2, flushed
// before each run anyway). For T = 1, 8, 32, 64 (decode) and 512, 4096 (prefill):
// moe_route over [T, 256] logits, moe_experts eager and (T <= 64) replayed from a CUDA
// graph as the engine's decode steps run it. Bytes are what the step must read: the
// weights of the experts the routing touched (counted on the host from the ids), x, the
// routing, and out written; the GB/s column is against the 4.3 TB/s copy ceiling (the
// brief's 4.26), the TFLOP/s column (2 T k 3 I H) against the 790 dense bf16 peak.
// moe_experts_shared (the block's routed and shared experts, Is 512) at T = 1..16, graph
// replays, with KernelConfig::moe_gemv on (the two GEMV kernels) and off (the
// composition: moe_experts twice, the gate, the add); bytes add the shared expert.
// moe_router (the router GEMV, softmax and top-k, [256, 2048] router) at T = 1, 8, graph
// replays, fused (KernelConfig::moe_router on) and composed (off: linear, moe_route);
// bytes are the router weights (1 MiB), GB/s against the same copy ceiling.
// Routings: "uniform" (each token k distinct experts uniformly at random: a dummy
// router; T = 64 touches ~223 of 256) and "skewed" (k distinct experts drawn with
// probability ~ 1 / (rank + 1), a Zipf-like router: fewer experts, heavier ones).
//
//   cuda_moe_bench   (needs a GPU; exits 0 with a note without one)
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cuda_bench.h"
#include "vt/cuda/api.h"
#include "vt/cuda/moe.h"
#include "vt/ops/moe.h"

namespace {

using vtbench::g_gpu;
using vtbench::rand_gpu;
using vtbench::row;
using vtbench::time_ms;

constexpr int64_t kH = 2048, kE = 256, kK = 8, kI = 512;

// k distinct experts per token: uniform, or with weight 1 / (e + 1) (sampling without
// replacement by repeated weighted draws).
std::vector<int32_t> routing(int64_t T, bool skewed, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> weight(static_cast<size_t>(kE));
  for (int64_t e = 0; e < kE; ++e) weight[size_t(e)] = skewed ? 1.0 / double(e + 1) : 1.0;
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> w = weight;
    for (int64_t j = 0; j < kK; ++j) {
      std::discrete_distribution<int32_t> d(w.begin(), w.end());
      const int32_t e = d(rng);
      ids.push_back(e);
      w[size_t(e)] = 0;
    }
  }
  return ids;
}

void bench_shape(int64_t T, bool skewed, const vt::Tensor& gate_up, const vt::Tensor& down,
                 const vt::Tensor& flush) {
  vt::Stream& s = *g_gpu;
  const std::vector<int32_t> ids_host = routing(T, skewed, 7 + uint64_t(T));
  const int64_t touched = int64_t(std::set<int32_t>(ids_host.begin(), ids_host.end()).size());
  vt::Tensor ids = vt::to_device(s, vtbench::i32(ids_host).view({T, kK}), s.device());
  vt::Tensor w = rand_gpu({T, kK}, vt::DType::kBF16, 0.1f, 3);
  vt::Tensor x = rand_gpu({T, kH}, vt::DType::kBF16, 1.0f, 5);
  vt::Tensor out = vt::Tensor::empty({T, kH}, vt::DType::kBF16, s.device());
  const double expert_bytes = double(3 * kI * kH) * 2;
  const double bytes = double(touched) * expert_bytes + double(T * kH) * 2 * 2 + double(T * kK) * 6;
  const double flops = 2.0 * double(T * kK) * double(3 * kI * kH);
  const std::string tag = " T " + std::to_string(T) + (skewed ? " skewed" : " uniform") + " (" +
                          std::to_string(touched) + " experts)";
  row("moe_experts" + tag,
      time_ms([&] { vt::cuda::moe_experts(s, x, gate_up, down, ids, w, out); }, &flush), bytes,
      flops);
  if (T <= 64) {
    s.begin_capture();
    vt::cuda::moe_experts(s, x, gate_up, down, ids, w, out);
    vt::cuda::GraphExecPtr graph = s.end_capture();
    row("moe_experts graph" + tag, time_ms([&] { s.replay(*graph); }, &flush), bytes, flops);
  }
}

void bench_shared(int64_t T, bool skewed, const vt::Tensor& gate_up, const vt::Tensor& down,
                  const vt::Tensor& flush) {
  vt::Stream& s = *g_gpu;
  constexpr int64_t kIs = 512;
  const std::vector<int32_t> ids_host = routing(T, skewed, 17 + uint64_t(T));
  const int64_t touched = int64_t(std::set<int32_t>(ids_host.begin(), ids_host.end()).size());
  vt::Tensor ids = vt::to_device(s, vtbench::i32(ids_host).view({T, kK}), s.device());
  vt::Tensor w = rand_gpu({T, kK}, vt::DType::kBF16, 0.1f, 3);
  vt::Tensor x = rand_gpu({T, kH}, vt::DType::kBF16, 1.0f, 5);
  vt::Tensor sgu = rand_gpu({1, 2 * kIs, kH}, vt::DType::kBF16, 0.02f, 6);
  vt::Tensor sdn = rand_gpu({1, kH, kIs}, vt::DType::kBF16, 0.04f, 7);
  vt::Tensor sg = rand_gpu({1, kH}, vt::DType::kBF16, 0.02f, 8);
  vt::Tensor out = vt::Tensor::empty({T, kH}, vt::DType::kBF16, s.device());
  const double bytes = double(touched * 3 * kI * kH + 3 * kIs * kH + kH) * 2 +
                       double(T * kH) * 2 * 2 + double(T * kK) * 6;
  const double flops = 2.0 * double(T) * double(kK * 3 * kI * kH + 3 * kIs * kH);
  for (bool fused : {true, false})
    vtbench::with_kernels(
        [&](vt::KernelConfig& k) { k.moe_gemv = fused ? vt::Toggle::kOn : vt::Toggle::kOff; },
        [&] {
          auto op = [&] { vt::moe_experts_shared(s, x, gate_up, down, ids, w, sgu, sdn, sg, out); };
          op();  // eager first: attributes and scratch outside the capture
          s.begin_capture();
          op();
          vt::cuda::GraphExecPtr graph = s.end_capture();
          row(std::string("moe_experts_shared graph ") + (fused ? "gemv" : "composed") + " T " +
                  std::to_string(T) + (skewed ? " skewed" : " uniform") + " (" +
                  std::to_string(touched) + " experts, " +
                  std::to_string(vt::Stream::graph_kernel_nodes(*graph)) + " kernels)",
              time_ms([&] { s.replay(*graph); }, &flush), bytes, flops);
        });
}

void bench_route(int64_t T) {
  vt::Stream& s = *g_gpu;
  vt::Tensor logits = rand_gpu({T, kE}, vt::DType::kBF16, 1.0f, 9);
  vt::Tensor ids = vt::Tensor::empty({T, kK}, vt::DType::kI32, s.device());
  vt::Tensor w = vt::Tensor::empty({T, kK}, vt::DType::kBF16, s.device());
  row("moe_route [" + std::to_string(T) + ", 256] k 8",
      time_ms([&] { vt::cuda::moe_route(s, logits, kK, ids, w); }),
      double(T * kE) * 2 + double(T * kK) * 6, 0);
}

// moe_router at the 35B-A3B router ([256, 2048] bf16, k 8), graph replays after an L2
// flush: KernelConfig::moe_router on (the one fused kernel) and off (the composition,
// linear then moe_route). Bytes: the router weights alone, the step's only HBM read.
void bench_router(int64_t T, const vt::Tensor& flush) {
  vt::Stream& s = *g_gpu;
  vt::Tensor x = rand_gpu({T, kH}, vt::DType::kBF16, 1.0f, 11);
  vt::Tensor router = rand_gpu({kE, kH}, vt::DType::kBF16, 0.02f, 12);
  vt::Tensor logits = vt::Tensor::empty({T, kE}, vt::DType::kBF16, s.device());
  vt::Tensor ids = vt::Tensor::empty({T, kK}, vt::DType::kI32, s.device());
  vt::Tensor w = vt::Tensor::empty({T, kK}, vt::DType::kBF16, s.device());
  const double bytes = double(kE * kH) * 2, flops = 2.0 * double(T * kE * kH);
  for (bool fused : {true, false})
    vtbench::with_kernels(
        [&](vt::KernelConfig& k) { k.moe_router = fused ? vt::Toggle::kOn : vt::Toggle::kOff; },
        [&] {
          auto op = [&] { vt::moe_router(s, x, router, kK, logits, ids, w); };
          op();  // eager first: cuBLASLt's plan outside the capture
          s.begin_capture();
          op();
          vt::cuda::GraphExecPtr graph = s.end_capture();
          row(std::string("moe_router graph ") + (fused ? "fused" : "linear+moe_route") + " T " +
                  std::to_string(T) + " (" +
                  std::to_string(vt::Stream::graph_kernel_nodes(*graph)) + " kernels)",
              time_ms([&] { s.replay(*graph); }, &flush), bytes, flops);
        });
}

}  // namespace

int main() {
  if (!vtbench::have_gpu("cuda_moe_bench")) return 0;
  vt::Stream gpu(vt::Device::cuda(0));
  vtbench::use_gpu("cuda_moe_bench", gpu);
  vtbench::header("op (35B-A3B experts: H 2048, E 256, k 8, I 512, bf16)");
  vtbench::copy_ceiling_row();
  const vt::Tensor gate_up = rand_gpu({kE, 2 * kI, kH}, vt::DType::kBF16, 0.02f, 1);
  const vt::Tensor down = rand_gpu({kE, kH, kI}, vt::DType::kBF16, 0.04f, 2);
  const vt::Tensor flush = vtbench::l2_flush_buffer();
  for (int64_t T : {1, 8, 32, 64, 512, 4096}) bench_route(T);
  for (int64_t T : {1, 8}) bench_router(T, flush);
  for (bool skewed : {false, true})
    for (int64_t T : {1, 8, 32, 64, 512, 4096}) bench_shape(T, skewed, gate_up, down, flush);
  for (bool skewed : {false, true})
    for (int64_t T : {1, 2, 4, 8, 16}) bench_shared(T, skewed, gate_up, down, flush);
  return 0;
}
