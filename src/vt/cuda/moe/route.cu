// CUDA moe_route (vt/ops/moe.h): one kernel, a warp per token. The warp widens the
// token's E logits into shared memory, takes the max and the f32 sum of expf(x - max)
// (lane partials, then a butterfly), stores p = expf(x - max) / sum, and picks the k
// largest p by k rounds of a warp argmax (lanes scan their experts in increasing index
// with a strict >, the butterfly keeps the lower index on equal p: torch.topk's rule),
// then w_j = p_j / sum_j p_j (the k-sum sequential in j order), rounded to the weights'
// dtype. No scratch, no host synchronisation: capturable in a CUDA graph.
#include <algorithm>
#include <cmath>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/moe.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kRouteWarps = 4;         // tokens per block
constexpr int kMaxTopK = kWarp;        // lane j holds the j-th selected p
constexpr int kSmemBudget = 48 << 10;  // the default dynamic shared memory limit

// p ranked as torch.topk ranks it: NaN above every number (a NaN logit row still routes
// to valid experts, never past E). `above(a, b)`: a ranks strictly higher than b.
__device__ __forceinline__ bool above(float a, float b) { return a > b || (isnan(a) && !isnan(b)); }
// The better of (v, i) and (ov, oi): the higher rank; equal rank: the lower index.
__device__ __forceinline__ void better(float& v, int& i, float ov, int oi) {
  const bool same = ov == v || (isnan(ov) && isnan(v));
  if (above(ov, v) || (same && oi < i)) v = ov, i = oi;
}

__global__ void route_kernel(const char* logits, DType logits_dt, int64_t row_bytes, int64_t T,
                             int E, int k, int warps, int32_t* ids, void* weights, DType w_dt) {
  extern __shared__ float probs[];  // [warps][E]
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t t = int64_t(blockIdx.x) * warps + warp;
  if (t >= T) return;  // no block barrier below: warps are independent
  float* p = probs + int64_t(warp) * E;
  const char* row = logits + t * row_bytes;
  float mx = -INFINITY;
  for (int e = lane; e < E; e += kWarp) {
    const float v = load_f32(row, logits_dt, e);
    p[e] = v;
    mx = fmaxf(mx, v);
  }
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int e = lane; e < E; e += kWarp) sum = __fadd_rn(sum, expf(__fsub_rn(p[e], mx)));
  sum = warp_sum(sum);
  for (int e = lane; e < E; e += kWarp) p[e] = __fdiv_rn(expf(__fsub_rn(p[e], mx)), sum);
  __syncwarp();
  float mine = 0.0f;  // lane j < k: the j-th largest p and its expert
  int mine_id = 0;
  for (int j = 0; j < k; ++j) {
    float v = -INFINITY;
    int id = 0x7fffffff;
    for (int e = lane; e < E; e += kWarp) {
      const float q = p[e];
      if (above(q, v)) v = q, id = e;  // increasing e: the first of equal p stays
    }
    for (int off = kWarp / 2; off > 0; off >>= 1)
      better(v, id, __shfl_xor_sync(0xffffffffu, v, off), __shfl_xor_sync(0xffffffffu, id, off));
    if (lane == j) mine = v, mine_id = id;
    __syncwarp();
    if (lane == 0 && id < E) p[id] = -INFINITY;  // taken: below every p (p >= 0)
    __syncwarp();
  }
  float total = 0.0f;  // sequential in j, as the CPU arm
  for (int j = 0; j < k; ++j) total = __fadd_rn(total, __shfl_sync(0xffffffffu, mine, j));
  if (lane < k) {
    ids[t * k + lane] = mine_id;
    store_f32(weights, w_dt, t * k + lane, __fdiv_rn(mine, total));
  }
}

}  // namespace

void moe_route(Stream& s, const Tensor& logits, int64_t k, const Tensor& topk_ids,
               const Tensor& topk_weights) {
  const int64_t T = logits.size(0), E = logits.size(1);
  if (T == 0) return;
  VT_CHECK(k >= 1 && k <= kMaxTopK, "moe_route (CUDA): k = ", k, " outside [1, ", kMaxTopK, "]");
  VT_CHECK(E * int64_t(sizeof(float)) <= kSmemBudget, "moe_route (CUDA): ", E,
           " experts exceed the kernel's shared-memory row (", kSmemBudget / 4, ")");
  StreamState& st = s.cuda_state();
  set_device(st);
  // Fewer tokens per block when kRouteWarps rows would pass the shared-memory budget.
  const int64_t row_smem = E * int64_t(sizeof(float));
  const int warps = int(std::min<int64_t>(kRouteWarps, kSmemBudget / row_smem));
  const int64_t blocks = (T + warps - 1) / warps;
  VT_CHECK(blocks <= int64_t(0x7fffffff), "moe_route (CUDA): ", T, " tokens exceed the grid");
  route_kernel<<<unsigned(blocks), warps * kWarp, size_t(warps * row_smem), st.stream>>>(
      static_cast<const char*>(logits.data_ptr()), logits.dtype(),
      logits.stride(0) * int64_t(dtype_size(logits.dtype())), T, int(E), int(k), warps,
      static_cast<int32_t*>(topk_ids.data_ptr()), topk_weights.data_ptr(), topk_weights.dtype());
  VT_CUDA_CHECK_LAUNCH("route_kernel");
}

}  // namespace vt::cuda
