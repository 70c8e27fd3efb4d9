// The routing of one token by one warp (moe_route's contract, vt/ops/moe.h; cuda/moe/
// only): the body of route_kernel (moe/route.cu) and of the fused router's last block
// (moe/router.cu), one piece of code so that both round and break ties identically.
//
// The warp widens the token's E logits into its shared row p, takes the max and the f32
// sum of expf(x - max) (lane partials, then a butterfly), stores p = expf(x - max) / sum,
// and picks the k largest p by k rounds of a warp argmax (lanes scan their experts in
// increasing index with a strict >, the butterfly keeps the lower index on equal p:
// torch.topk's rule), then w_j = p_j /
// sum_j p_j (the k-sum sequential in j order), rounded to the weights' dtype.
#pragma once

#include <cmath>
#include <cstdint>

#include "vt/cuda/common.cuh"

namespace vt::cuda::moe {

inline constexpr int kMaxTopK = kWarp;  // lane j holds the j-th selected p

// p ranked as torch.topk ranks it: NaN above every number (a NaN logit row still routes
// to valid experts, never past E). `above(a, b)`: a ranks strictly higher than b.
__device__ __forceinline__ bool above(float a, float b) { return a > b || (isnan(a) && !isnan(b)); }
// The better of (v, i) and (ov, oi): the higher rank; equal rank: the lower index.
__device__ __forceinline__ void better(float& v, int& i, float ov, int oi) {
  const bool same = ov == v || (isnan(ov) && isnan(v));
  if (above(ov, v) || (same && oi < i)) v = ov, i = oi;
}

// Token t's routing by the calling warp (all 32 lanes, converged): logit(e) is the
// token's logit of expert e as f32, p the warp's [E] floats of shared memory; writes
// ids[t k + j] and weights[t k + j] (w_dt) for j < k <= kMaxTopK.
template <class Logit>
__device__ __forceinline__ void route_token(const Logit& logit, float* p, int E, int k, int64_t t,
                                            int32_t* ids, void* weights, DType w_dt) {
  const int lane = threadIdx.x % kWarp;
  float mx = -INFINITY;
  for (int e = lane; e < E; e += kWarp) {
    const float v = logit(e);
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

}  // namespace vt::cuda::moe
