// CUDA moe_experts_shared (vt/ops/moe.h) for decode batches: the routed experts and the
// gated shared expert in two GEMV kernels, with no permutation, no per-entry output rows
// and no separate k-sum, gate, sigmoid or add kernels (the composition takes 10 kernels).
//
//   1. up_kernel, grid (column blocks of kWarps, T k + T entries): entry i < T k is
//      routed (token i / k, expert ids[i]), entry T k + t is token t's shared expert. A
//      warp per hid column c: g, u = x[t] . gate_up[e, c], x[t] . gate_up[e, I + c] (f32
//      over 16-byte chunks), hid[i, c] = R(R(silu(R(g))) * R(u)). Block (0, T k + t)'s
//      warp 0 also writes gate[t] = R(sigmoid(R(x[t] . shared_gate))) (f32 scratch).
//   2. down_kernel, grid (column blocks of kWarps, T): the token's k + 1 hid rows staged
//      in shared memory, a warp per output column n: y_j = R(R(hid_j . down[e_j, n]) *
//      w_j) summed in f32 in j order, s = R(R(hid_s . shared_down[n]) * gate[t]),
//      out[t, n] = R(R(sum) + s).
// The rounding points are moe_experts' and the composition's exactly; only the order of
// each dot product's f32 sum differs. Every entry reads its expert's rows alone, so an
// expert picked by several tokens is read from L2 again: the path is for the few tokens
// of a decode step (KernelConfig::moe_gemv). Both kernels follow launch.cuh's PDL rule.
#include <algorithm>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/moe.h"
#include "vt/cuda/stream_state.h"
#include "vt/kernel_config.h"

namespace vt::cuda {

namespace {

constexpr int kWarps = 8;              // columns per block, a warp each
constexpr int kUnroll = 4;             // up: 16-byte chunks per lane per row in flight
constexpr int kExpertsInFlight = 4;    // down: experts' rows in flight, 2 chunks per lane each
constexpr int kMaxTokens = 16;         // the most tokens the path takes
constexpr int kAutoMaxTokens = 8;      // the measured rule's bound (docs/KERNELS.md)
constexpr int kSmemBudget = 48 << 10;  // the default dynamic shared memory limit

__device__ __forceinline__ float bf16r(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

// Copies n8 16-byte chunks from global to shared memory, the whole block.
__device__ __forceinline__ void stage(uint4* dst, const uint4* src, int n8) {
  for (int q = threadIdx.x; q < n8; q += kWarps * kWarp) dst[q] = src[q];
}

// The lane's share of the dot products of rows a and b (N = 2) or a alone (N = 1) with x
// (shared memory), over n8 16-byte chunks: kUnroll chunks of each row in flight.
template <int N>
__device__ __forceinline__ void dot_rows(const uint4* a, const uint4* b, const uint4* x, int n8,
                                         float& da, float& db) {
  const int lane = threadIdx.x % kWarp;
  for (int q0 = lane; q0 < n8; q0 += kWarp * kUnroll) {
    uint4 va[kUnroll], vb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int q = q0 + u * kWarp;
      va[u] = q < n8 ? __ldcg(a + q) : uint4{};
      if (N == 2) vb[u] = q < n8 ? __ldcg(b + q) : uint4{};
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int q = q0 + u * kWarp;
      if (q < n8) {
        const uint4 xv = x[q];
        da += dot8(va[u], xv, 0.0f);
        if (N == 2) db += dot8(vb[u], xv, 0.0f);
      }
    }
  }
}

struct UpArgs {
  const uint4* x;         // [T, H / 8]
  const uint4* gate_up;   // [E, 2I, H / 8]
  const uint4* shared_gu; // [2Is, H / 8]
  const uint4* shared_gate;  // [H / 8]
  const int32_t* ids;     // [T k]
  __nv_bfloat16* hid;     // [T k, I]
  __nv_bfloat16* hid_s;   // [T, Is]
  float* gate;            // [T]
  int k, H8, I, Is, routed;  // routed = T k
};

__global__ void __launch_bounds__(kWarps* kWarp) up_kernel(UpArgs a) {
  pdl_wait();
  pdl_trigger();
  extern __shared__ uint4 xs[];  // [H / 8]: the entry's token row
  const int entry = blockIdx.y;
  const bool shared = entry >= a.routed;
  const int t = shared ? entry - a.routed : entry / a.k;
  stage(xs, a.x + int64_t(t) * a.H8, a.H8);
  __syncthreads();
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (shared && blockIdx.x == 0 && warp == 0) {
    float d = 0.0f, unused = 0.0f;
    dot_rows<1>(a.shared_gate, nullptr, xs, a.H8, d, unused);
    d = warp_sum(d);
    if (lane == 0) a.gate[t] = bf16r(sigmoidf(bf16r(d)));
  }
  const int I = shared ? a.Is : a.I;
  const int c = blockIdx.x * kWarps + warp;
  if (c >= I) return;
  const uint4* base =
      shared ? a.shared_gu : a.gate_up + int64_t(a.ids[entry]) * 2 * a.I * a.H8;
  float g = 0.0f, u = 0.0f;
  dot_rows<2>(base + int64_t(c) * a.H8, base + int64_t(I + c) * a.H8, xs, a.H8, g, u);
  g = warp_sum(g);
  u = warp_sum(u);
  if (lane == 0) {
    const float h = bf16r(bf16r(siluf(bf16r(g))) * bf16r(u));
    __nv_bfloat16* row = shared ? a.hid_s + int64_t(t) * I : a.hid + int64_t(entry) * I;
    row[c] = __float2bfloat16_rn(h);
  }
}

struct DownArgs {
  const uint4* hid;        // [T k, I / 8]
  const uint4* hid_s;      // [T, Is / 8]
  const uint4* down;       // [E, H, I / 8]
  const uint4* shared_down;  // [H, Is / 8]
  const int32_t* ids;      // [T k]
  const void* w;           // [T k] routing weights
  DType w_dt;
  const float* gate;       // [T]
  __nv_bfloat16* out;      // [T, H]
  int k, H, I8, Is8;
};

__global__ void __launch_bounds__(kWarps* kWarp) down_kernel(DownArgs a) {
  pdl_wait();
  pdl_trigger();
  extern __shared__ uint4 hs[];  // [k I / 8 + Is / 8]: the token's hid rows, then hid_s
  const int t = blockIdx.y;
  stage(hs, a.hid + int64_t(t) * a.k * a.I8, a.k * a.I8);
  stage(hs + a.k * a.I8, a.hid_s + int64_t(t) * a.Is8, a.Is8);
  __syncthreads();
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int n = blockIdx.x * kWarps + warp;
  if (n >= a.H) return;
  float acc = 0.0f;
  for (int j0 = 0; j0 < a.k; j0 += kExpertsInFlight) {  // sums added in j order
    const uint4* r[kExpertsInFlight];
    float d[kExpertsInFlight];
#pragma unroll
    for (int u = 0; u < kExpertsInFlight; ++u) {
      const int j = min(j0 + u, a.k - 1);
      r[u] = a.down + (int64_t(a.ids[t * a.k + j]) * a.H + n) * a.I8;
      d[u] = 0.0f;
    }
    for (int q0 = lane; q0 < a.I8; q0 += kWarp * 2) {
      uint4 v[kExpertsInFlight][2];
#pragma unroll
      for (int u = 0; u < kExpertsInFlight; ++u)
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          const int q = q0 + m * kWarp;
          v[u][m] = q < a.I8 && j0 + u < a.k ? __ldcg(r[u] + q) : uint4{};
        }
#pragma unroll
      for (int u = 0; u < kExpertsInFlight; ++u)
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          const int q = q0 + m * kWarp;
          if (q < a.I8 && j0 + u < a.k) d[u] += dot8(v[u][m], hs[(j0 + u) * a.I8 + q], 0.0f);
        }
    }
#pragma unroll
    for (int u = 0; u < kExpertsInFlight; ++u)
      if (j0 + u < a.k)
        acc += bf16r(bf16r(warp_sum(d[u])) * load_f32(a.w, a.w_dt, t * a.k + j0 + u));
  }
  float ds = 0.0f, unused = 0.0f;
  dot_rows<1>(a.shared_down + int64_t(n) * a.Is8, nullptr, hs + a.k * a.I8, a.Is8, ds, unused);
  ds = warp_sum(ds);
  if (lane == 0) {
    const float s = bf16r(bf16r(ds) * a.gate[t]);
    a.out[int64_t(t) * a.H + n] = __float2bfloat16_rn(bf16r(acc) + s);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// The most tokens the path takes under a KernelConfig::moe_gemv setting.
int max_tokens(Toggle t) { return t == Toggle::kOff ? 0 : t == Toggle::kOn ? kMaxTokens : kAutoMaxTokens; }

}  // namespace

bool moe_experts_shared(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                        const Tensor& topk_ids, const Tensor& topk_weights,
                        const Tensor& shared_gate_up, const Tensor& shared_down,
                        const Tensor& shared_gate, const Tensor& out) {
  const int64_t T = x.size(0), H = x.size(1), I = gate_up.size(1) / 2;
  const int64_t Is = shared_gate_up.size(1) / 2, k = topk_ids.size(1);
  StreamState& st = s.cuda_state();
  if (T > max_tokens(st.kernels->moe_gemv)) return false;
  for (const Tensor* t : {&x, &gate_up, &down, &shared_gate_up, &shared_down, &shared_gate, &out})
    if (t->dtype() != DType::kBF16 || !aligned16(t->data_ptr())) return false;
  if (H % 8 != 0 || I % 8 != 0 || Is % 8 != 0) return false;
  const size_t up_smem = size_t(H) * 2, down_smem = size_t(k * I + Is) * 2;
  if (up_smem > size_t(kSmemBudget) || down_smem > size_t(kSmemBudget)) return false;
  set_device(st);
  const Device dev = x.device();
  Tensor hid = Tensor::empty({T * k, I}, DType::kBF16, dev);
  Tensor hid_s = Tensor::empty({T, Is}, DType::kBF16, dev);
  Tensor gate = Tensor::empty({T}, DType::kF32, dev);
  const int32_t* ids = static_cast<const int32_t*>(topk_ids.data_ptr());
  auto u4 = [](const Tensor& t) { return static_cast<const uint4*>(t.data_ptr()); };
  auto* hid_p = static_cast<__nv_bfloat16*>(hid.data_ptr());
  auto* hid_s_p = static_cast<__nv_bfloat16*>(hid_s.data_ptr());
  float* gate_p = static_cast<float*>(gate.data_ptr());
  const UpArgs ua{u4(x),   u4(gate_up), u4(shared_gate_up), u4(shared_gate),
                  ids,     hid_p,       hid_s_p,            gate_p,
                  int(k),  int(H / 8),  int(I),             int(Is),
                  int(T * k)};
  const unsigned up_cols = unsigned((std::max(I, Is) + kWarps - 1) / kWarps);
  launch_kernel(st, "moe up_kernel", up_kernel,
                LaunchShape{dim3(up_cols, unsigned(T * k + T)), dim3(kWarps * kWarp), up_smem},
                ua);
  const DownArgs da{u4(hid),
                    u4(hid_s),
                    u4(down),
                    u4(shared_down),
                    ids,
                    topk_weights.data_ptr(),
                    topk_weights.dtype(),
                    gate_p,
                    static_cast<__nv_bfloat16*>(out.data_ptr()),
                    int(k),
                    int(H),
                    int(I / 8),
                    int(Is / 8)};
  launch_kernel(st, "moe down_kernel", down_kernel,
                LaunchShape{dim3(unsigned((H + kWarps - 1) / kWarps), unsigned(T)),
                            dim3(kWarps * kWarp), down_smem},
                da);
  return true;
}

}  // namespace vt::cuda
