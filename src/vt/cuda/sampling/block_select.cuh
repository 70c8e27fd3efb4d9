// Block-wide building blocks of the device sampler (CUDA sources only). One CTA of
// kThreads threads owns one row of V values; every function here is called by all
// threads of the block, returns the same value to all of them, and is deterministic
// (fixed reduction trees; integer sums where order could matter).
//
//   radix_select: the largest key K among the row's keys such that pred(weight of
//     keys >= K) holds, where the weight of a key is 1 (a count: top_k, top-N) or its
//     fixed-point mass (top_p). Three passes (12, 10, 10 bits) from the most
//     significant; each pass histograms the keys that match the prefix so far (one
//     block-wide histogram, shared-memory atomics), then one warp finds the digit
//     where the descending cumulative weight first satisfies pred. Returns K and the
//     weight of the keys strictly above it.
//   nth_match: the id of the n-th (1-based) index in ascending order that satisfies a
//     predicate; warps own contiguous segments (counts, then one warp rescans its
//     segment 32 ids at a time with ballots).
//   first_crossing: the first id whose inclusive prefix sum of u64 weights, as a
//     double, exceeds a target (the inverse-CDF draw); same segment layout.
#pragma once

#include <cstdint>

#include "vt/cuda/common.cuh"

namespace vt::cuda::sampling {

inline constexpr int kThreads = 512;
inline constexpr int kWarps = kThreads / kWarp;
// radix_select's passes over the 32-bit key: 12 bits (sign, exponent, 3 mantissa bits:
// logits spread over ~100 bins, so shared atomics rarely collide), then 10 and 10.
__device__ constexpr int kPassShift[3] = {20, 10, 0};
__device__ constexpr int kPassBits[3] = {12, 10, 10};
inline constexpr int kMaxBins = 4096;

struct BlockShared {
  unsigned long long hist[kMaxBins];  // radix_select's histogram
  unsigned long long warp_u64[kWarps];
  double warp_f64[kWarps];
  float warp_f32[kWarps];
  int64_t warp_i64[kWarps];
  unsigned long long bcast_u64[2];
  int64_t bcast_i64[2];
  double bcast_f64;
  float bcast_f32;
};

__device__ __forceinline__ int lane_id() { return int(threadIdx.x) & (kWarp - 1); }
__device__ __forceinline__ int warp_id() { return int(threadIdx.x) / kWarp; }

// One CTA streams a whole row from L2 several times: each thread keeps kUnroll loads
// in flight (issued before their uses) so the passes are not latency-bound.
inline constexpr int kUnroll = 4;

// use(load(i), i) for i = begin, begin + step, ... < end, in that order.
template <class Load, class Use>
__device__ __forceinline__ void for_strided(int64_t begin, int64_t end, int64_t step, Load load,
                                            Use use) {
  int64_t i = begin;
  for (; i + (kUnroll - 1) * step < end; i += kUnroll * step) {
    float v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load(i + u * step);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) use(v[u], i + u * step);
  }
  for (; i < end; i += step) use(load(i), i);
}

// The same over [begin, end) with every lane of the warp in every step (for warp
// intrinsics): use(v, i, valid) with lane l at i = base + l, v = 0 where !valid.
template <class Load, class Use>
__device__ __forceinline__ void for_warp_uniform(int64_t begin, int64_t end, int64_t stride,
                                                 int64_t lane, Load load, Use use) {
  for (int64_t base = begin; base < end; base += kUnroll * stride) {
    float v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * stride + lane;
      v[u] = i < end ? load(i) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * stride + lane;
      use(v[u], i, i < end);
    }
  }
}

__device__ __forceinline__ unsigned long long block_sum_u64(BlockShared& sh,
                                                            unsigned long long v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (lane_id() == 0) sh.warp_u64[warp_id()] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long t = 0;
    for (int w = 0; w < kWarps; ++w) t += sh.warp_u64[w];
    sh.bcast_u64[0] = t;
  }
  __syncthreads();
  const unsigned long long t = sh.bcast_u64[0];
  __syncthreads();
  return t;
}

__device__ __forceinline__ double block_sum_f64(BlockShared& sh, double v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (lane_id() == 0) sh.warp_f64[warp_id()] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int w = 0; w < kWarps; ++w) t += sh.warp_f64[w];
    sh.bcast_f64 = t;
  }
  __syncthreads();
  const double t = sh.bcast_f64;
  __syncthreads();
  return t;
}

__device__ __forceinline__ float block_max(BlockShared& sh, float v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (lane_id() == 0) sh.warp_f32[warp_id()] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = sh.warp_f32[0];
    for (int w = 1; w < kWarps; ++w) t = fmaxf(t, sh.warp_f32[w]);
    sh.bcast_f32 = t;
  }
  __syncthreads();
  const float t = sh.bcast_f32;
  __syncthreads();
  return t;
}

// The largest v and, among equal ones, the lowest id (std::max_element's first max).
// Threads pass their own best (v, id); id = INT64_MAX for none.
__device__ __forceinline__ int64_t block_argmax(BlockShared& sh, float v, int64_t id) {
  for (int o = kWarp / 2; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, id, o);
    if (ov > v || (ov == v && oi < id)) v = ov, id = oi;
  }
  if (lane_id() == 0) sh.warp_f32[warp_id()] = v, sh.warp_i64[warp_id()] = id;
  __syncthreads();
  if (threadIdx.x == 0) {
    float bv = sh.warp_f32[0];
    int64_t bi = sh.warp_i64[0];
    for (int w = 1; w < kWarps; ++w) {
      const float ov = sh.warp_f32[w];
      const int64_t oi = sh.warp_i64[w];
      if (ov > bv || (ov == bv && oi < bi)) bv = ov, bi = oi;
    }
    sh.bcast_i64[0] = bi;
  }
  __syncthreads();
  const int64_t t = sh.bcast_i64[0];
  __syncthreads();
  return t;
}

struct Selected {
  uint32_t key;
  unsigned long long above;  // weight of the keys > key
};

// load(i) -> the value of index i; key_weight(value, i, &key) -> weight (0 skips the
// index); pred(cumulative weight) -> bool, monotone (false then true as the weight
// grows). At least one key must satisfy it.
template <class Load, class KeyWeight, class Pred>
__device__ Selected radix_select(BlockShared& sh, int64_t n, Load load, KeyWeight key_weight,
                                 Pred pred) {
  uint32_t prefix = 0, mask = 0;
  unsigned long long above = 0;
  for (int pass = 0; pass < 3; ++pass) {
    const int shift = kPassShift[pass], bins = 1 << kPassBits[pass];
    for (int i = threadIdx.x; i < bins; i += kThreads) sh.hist[i] = 0;
    __syncthreads();
    // Whole warps per step: when every counted lane of a warp hits one bin (masked
    // tokens all at -inf, a narrowed prefix), one atomic adds the warp's sum.
    for_warp_uniform(0, n, kThreads, threadIdx.x, load, [&](float v, int64_t i, bool valid) {
      uint32_t key = 0;
      unsigned long long w = valid ? key_weight(v, i, &key) : 0ull;
      if ((key & mask) != prefix) w = 0;
      const uint32_t digit = (key >> shift) & uint32_t(bins - 1);
      const uint32_t lo = __reduce_min_sync(0xffffffffu, w ? digit : 0xffffffffu);
      const uint32_t hi = __reduce_max_sync(0xffffffffu, w ? digit : 0u);
      if (lo == hi) {
        for (int o = kWarp / 2; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
        if (lane_id() == 0) atomicAdd(&sh.hist[lo], w);
      } else if (w != 0) {
        atomicAdd(&sh.hist[digit], w);
      }
    });
    __syncthreads();
    if (warp_id() == 0) {
      // Lane l owns bins/32 digits, descending from the top: lane 0 the largest.
      const int lane = lane_id(), per_lane = bins / kWarp;
      const int top = bins - 1 - per_lane * lane;
      unsigned long long own = 0;
      for (int j = 0; j < per_lane; ++j) own += sh.hist[top - j];
      unsigned long long incl = own;
      for (int o = 1; o < kWarp; o <<= 1) {
        const unsigned long long up = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += up;
      }
      const unsigned hit = __ballot_sync(0xffffffffu, pred(above + incl));
      const int first = hit ? __ffs(hit) - 1 : kWarp - 1;  // no hit: the lowest digits
      if (lane == first) {
        unsigned long long cum = above + (incl - own);
        int digit = top - (per_lane - 1);
        for (int j = 0; j < per_lane; ++j) {
          const unsigned long long b = sh.hist[top - j];
          if (pred(cum + b)) {
            digit = top - j;
            break;
          }
          cum += b;
        }
        sh.bcast_u64[0] = cum;  // weight above the chosen digit
        sh.bcast_u64[1] = static_cast<unsigned long long>(digit);
      }
    }
    __syncthreads();
    above = sh.bcast_u64[0];
    prefix |= uint32_t(sh.bcast_u64[1]) << shift;
    mask |= uint32_t(bins - 1) << shift;
    __syncthreads();
  }
  return {prefix, above};
}

// Segment of warp w in a row of n: [w * seg, min(n, (w + 1) * seg)), seg a multiple of 32.
__device__ __forceinline__ int64_t segment_len(int64_t n) {
  return ((n + kWarps - 1) / kWarps + kWarp - 1) / kWarp * kWarp;
}

// The id of the nth (1-based) index i in [0, n) with match(load(i), i); nth <= the
// match count.
template <class Load, class Match>
__device__ int64_t nth_match(BlockShared& sh, int64_t n, int64_t nth, Load load, Match match) {
  const int64_t seg = segment_len(n);
  const int64_t begin = warp_id() * seg, end = min(n, begin + seg);
  int64_t count = 0;
  for_warp_uniform(begin, end, kWarp, lane_id(), load, [&](float v, int64_t i, bool valid) {
    count += __popc(__ballot_sync(0xffffffffu, valid && match(v, i)));
  });
  if (lane_id() == 0) sh.warp_i64[warp_id()] = count;
  __syncthreads();
  if (threadIdx.x == 0) {
    int64_t before = 0;
    int w = 0;
    while (w < kWarps - 1 && before + sh.warp_i64[w] < nth) before += sh.warp_i64[w++];
    sh.bcast_i64[0] = w;
    sh.bcast_i64[1] = nth - before;  // rank inside warp w's segment
  }
  __syncthreads();
  const int w = int(sh.bcast_i64[0]);
  int64_t want = sh.bcast_i64[1];
  __syncthreads();
  if (warp_id() == w) {
    int64_t found = -1;
    for_warp_uniform(begin, end, kWarp, lane_id(), load, [&](float v, int64_t i, bool valid) {
      unsigned bits = __ballot_sync(0xffffffffu, valid && match(v, i));
      if (found >= 0) return;  // warp-uniform
      const int c = __popc(bits);
      if (c < want) {
        want -= c;
        return;
      }
      for (int64_t k = 1; k < want; ++k) bits &= bits - 1;  // drop the lowest want-1
      found = (i - lane_id()) + __ffs(bits) - 1;
    });
    if (lane_id() == 0) sh.bcast_i64[0] = found;
  }
  __syncthreads();
  const int64_t id = sh.bcast_i64[0];
  __syncthreads();
  return id;
}

// The first id i in [0, n) whose inclusive prefix sum of weight(load(i), i) exceeds
// target (as a double), or -1 when none does.
template <class Load, class Weight>
__device__ int64_t first_crossing(BlockShared& sh, int64_t n, double target, Load load,
                                  Weight weight) {
  const int64_t seg = segment_len(n);
  const int64_t begin = warp_id() * seg, end = min(n, begin + seg);
  unsigned long long sum = 0;
  for_strided(begin + lane_id(), end, kWarp, load, [&](float v, int64_t i) { sum += weight(v, i); });
  for (int o = kWarp / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane_id() == 0) sh.warp_u64[warp_id()] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long before = 0;
    int w = 0;
    while (w < kWarps && !(double(before + sh.warp_u64[w]) > target)) before += sh.warp_u64[w++];
    sh.bcast_i64[0] = w;
    sh.bcast_u64[0] = before;
  }
  __syncthreads();
  const int w = int(sh.bcast_i64[0]);
  unsigned long long base_sum = sh.bcast_u64[0];
  __syncthreads();
  if (w == kWarps) return -1;
  if (warp_id() == w) {
    int64_t found = -1;
    for_warp_uniform(begin, end, kWarp, lane_id(), load, [&](float v, int64_t i, bool valid) {
      if (found >= 0) return;  // warp-uniform
      unsigned long long incl = valid ? weight(v, i) : 0ull;
      for (int o = 1; o < kWarp; o <<= 1) {
        const unsigned long long up = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane_id() >= o) incl += up;
      }
      const unsigned hit = __ballot_sync(0xffffffffu, valid && double(base_sum + incl) > target);
      if (hit) found = (i - lane_id()) + __ffs(hit) - 1;
      base_sum += __shfl_sync(0xffffffffu, incl, kWarp - 1);
    });
    if (lane_id() == 0) sh.bcast_i64[0] = found;
  }
  __syncthreads();
  const int64_t id = sh.bcast_i64[0];
  __syncthreads();
  return id;
}

}  // namespace vt::cuda::sampling
