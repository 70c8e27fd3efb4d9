// CUDA moe_router (vt/ops/moe.h) for decode batches: the router GEMV, the softmax and
// the top-k of T <= kMoeRouterMaxTokens tokens in one kernel (linear + moe_route take a
// GEMM and a routing kernel).
//
//   router_kernel, grid (groups of kWarps experts, at most two blocks per SM), a warp per
//   expert e (grid-stride over E): it streams router_w[e] in 16-byte chunks (kUnroll per
//   lane in flight: a 2048-wide row at once; the first ones issued before the block
//   stages the T x rows in shared memory), dots it with each x row in f32 and writes
//   logits[t, e] = R(sum) (R: logits' dtype, as linear rounds). Each block then takes a
//   ticket on the stream's grid_ticket word; the last block to arrive (every other
//   block's logits visible to it through the tickets' release and acquire) sets the word
//   back to zero and routes the T tokens, a warp per token running moe::route_token
//   (moe/route.cuh, route_kernel's own body) over the logits it reads back from L2.
//   Blocks never wait for each other: no residency needed.
// The logits' rounding and the routing are the composition's exactly; only the order of
// each dot product's f32 sum differs from linear's. Follows launch.cuh's PDL rule.
#include <algorithm>
#include <cuda/atomic>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/moe.h"
#include "vt/cuda/moe/route.cuh"
#include "vt/cuda/stream_state.h"
#include "vt/kernel_config.h"

namespace vt::cuda {

namespace {

constexpr int kWarps = 8;   // experts per block at a time, a warp each
constexpr int kUnroll = 8;  // 16-byte router chunks per lane in flight
constexpr int kMaxTokens = int(kMoeRouterMaxTokens);
constexpr int kSmemBudget = 48 << 10;  // the default dynamic shared memory limit

// Element i of a logits buffer written by other blocks of this grid: through L2 (ld.cg),
// never a line this SM's L1 may hold from before their writes.
__device__ __forceinline__ float load_f32_l2(const void* p, DType dt, int64_t i) {
  if (dt == DType::kF32) return __ldcg(static_cast<const float*>(p) + i);
  const unsigned short b = __ldcg(static_cast<const unsigned short*>(p) + i);
  return dt == DType::kBF16 ? __bfloat162float(__ushort_as_bfloat16(b))
                            : __half2float(__ushort_as_half(b));
}

struct RouterArgs {
  const uint4* x;         // [T, H / 8]
  const uint4* router_w;  // [E, H / 8]
  void* logits;           // [T, E]
  DType logits_dt;
  int32_t* ids;   // [T, k]
  void* weights;  // [T, k]
  DType w_dt;
  unsigned* ticket;  // the stream's grid_ticket: zero at launch, zero again at exit
  int T, E, H8, k;
};

// kUnroll 16-byte chunks of a router row from chunk q0 on (lane-strided), zero past n8.
__device__ __forceinline__ void load_chunks(uint4 (&v)[kUnroll], const uint4* row, int q0, int n8) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int q = q0 + u * kWarp;
    v[u] = q < n8 ? __ldcg(row + q) : uint4{};
  }
}

// Registers for the kUnroll chunks in flight (the default bound spills them); the grid is
// a few dozen blocks (32 at E 256), at most two per SM.
__global__ void __launch_bounds__(kWarps* kWarp, 1) router_kernel(RouterArgs a) {
  pdl_wait();
  pdl_trigger();
  // The T x rows [T][H / 8] for the dot products; then, in the last block, the routing
  // rows [T][E] of f32 over the same bytes.
  extern __shared__ uint4 smem[];
  __shared__ bool last;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int e0 = blockIdx.x * kWarps + warp, stride = gridDim.x * kWarps;
  uint4 wv[kUnroll];  // the warp's first chunks in flight while x is staged
  if (e0 < a.E) load_chunks(wv, a.router_w + int64_t(e0) * a.H8, lane, a.H8);
  for (int q = threadIdx.x; q < a.T * a.H8; q += kWarps * kWarp) smem[q] = __ldg(a.x + q);
  __syncthreads();
  for (int e = e0; e < a.E; e += stride) {
    const uint4* row = a.router_w + int64_t(e) * a.H8;
    float acc[kMaxTokens] = {};
    for (int q0 = lane; q0 < a.H8; q0 += kWarp * kUnroll) {
      if (e != e0 || q0 != lane) load_chunks(wv, row, q0, a.H8);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int q = q0 + u * kWarp;
        if (q >= a.H8) break;
#pragma unroll
        for (int t = 0; t < kMaxTokens; ++t)
          if (t < a.T) acc[t] = dot8(wv[u], smem[t * a.H8 + q], acc[t]);
      }
    }
#pragma unroll
    for (int t = 0; t < kMaxTokens; ++t)
      if (t < a.T) {
        const float d = warp_sum(acc[t]);
        if (lane == 0) store_f32(a.logits, a.logits_dt, int64_t(t) * a.E + e, d);
      }
  }
  // The last block to finish routes. The barrier orders the block's logits before thread
  // 0's ticket, whose release publishes them and whose acquire (in the last block) sees
  // every other block's; the second barrier passes that on to the block's threads (the
  // arrive / wait pattern of CUTLASS's semaphores). The barriers also end every warp's
  // reads of the staged x.
  __syncthreads();
  if (threadIdx.x == 0) {
    ::cuda::atomic_ref<unsigned, ::cuda::thread_scope_device> ticket(*a.ticket);
    last = ticket.fetch_add(1u, ::cuda::memory_order_acq_rel) == gridDim.x - 1;
    if (last) ticket.store(0u, ::cuda::memory_order_relaxed);  // every block has taken one
  }
  __syncthreads();
  if (!last) return;
  float* probs = reinterpret_cast<float*>(smem);
  for (int t = warp; t < a.T; t += kWarps)
    moe::route_token(
        [&](int e) { return load_f32_l2(a.logits, a.logits_dt, int64_t(t) * a.E + e); },
        probs + int64_t(t) * a.E, a.E, a.k, t, a.ids, a.weights, a.w_dt);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

bool moe_router(Stream& s, const Tensor& x, const Tensor& router_w, int64_t k, const Tensor& logits,
                const Tensor& topk_ids, const Tensor& topk_weights) {
  const int64_t T = x.size(0), H = x.size(1), E = router_w.size(0);
  StreamState& st = s.cuda_state();
  if (st.kernels->moe_router != Toggle::kOn) return false;  // auto: measured slower
  if (T < 1 || T > kMaxTokens || k > moe::kMaxTopK || H % 8 != 0) return false;
  for (const Tensor* t : {&x, &router_w})
    if (t->dtype() != DType::kBF16 || !aligned16(t->data_ptr())) return false;
  for (const Tensor* t : {&x, &router_w, &logits})
    if (!t->is_contiguous()) return false;
  const size_t smem = size_t(std::max(T * H * 2, T * E * int64_t(sizeof(float))));
  if (smem > size_t(kSmemBudget)) return false;
  set_device(st);
  const int64_t groups = (E + kWarps - 1) / kWarps;
  const int64_t max_blocks = 2 * int64_t(std::max(st.num_sms, 1));  // grid-stride beyond
  const RouterArgs ra{static_cast<const uint4*>(x.data_ptr()),
                      static_cast<const uint4*>(router_w.data_ptr()),
                      logits.data_ptr(),
                      logits.dtype(),
                      static_cast<int32_t*>(topk_ids.data_ptr()),
                      topk_weights.data_ptr(),
                      topk_weights.dtype(),
                      st.grid_ticket,
                      int(T),
                      int(E),
                      int(H / 8),
                      int(k)};
  launch_kernel(
      st, "moe router_kernel", router_kernel,
      LaunchShape{dim3(unsigned(std::min(groups, max_blocks))), dim3(kWarps * kWarp), smem}, ra);
  return true;
}

}  // namespace vt::cuda
