// segment_attention on CUDA cores (segment_attention.cuh): the arm for f32 (and mixed)
// inputs and for head dims past the tensor-core kernel's 128.
//
// A CTA of 128 threads takes one tile of up to 16 query rows of one segment and one head;
// the 8 consecutive lanes of row r = t / 8 own the dims g, g + 8, ... (g = t % 8) of its
// query and accumulator in registers. Per tile of 16 keys (K and V widened to f32 in
// shared memory): each lane's partial dot products summed over its 8 lanes by xor
// shuffles (all 8 then hold the same score), the online softmax in base 2 in f32, and
// acc = acc * corr + p * v (p rounded to v's dtype when narrow, as the tensor-core kernel
// rounds P). The row's 8 lanes keep identical m and l, so no final reduction.
#include <cmath>

#include "vt/cuda/encoder/segment_attention.cuh"

namespace vt::cuda::segattn {

namespace {

constexpr int kKeysCc = 16;
constexpr int kLanesPerRow = 8;
constexpr int kDimsPerLane = kCudaCoreMaxDim / kLanesPerRow;
static_assert(kCudaCoreRows * kLanesPerRow == kThreads, "one row per 8 lanes");

__global__ void __launch_bounds__(kThreads) segment_attention_cuda_cores_kernel(Params p) {
  __shared__ float ks[kKeysCc][kCudaCoreMaxDim];
  __shared__ float vs[kKeysCc][kCudaCoreMaxDim];
  const int head = blockIdx.x;
  const Tile tile = p.tiles[blockIdx.y];
  const int r = threadIdx.x / kLanesPerRow, g = threadIdx.x % kLanesPerRow;
  const int hd = p.head_dim;
  const int64_t q_row = int64_t(tile.q0 + r) * p.q_t + int64_t(head) * p.q_h;

  float q[kDimsPerLane], acc[kDimsPerLane];
#pragma unroll
  for (int j = 0; j < kDimsPerLane; ++j) {
    const int d = g + kLanesPerRow * j;
    q[j] = r < tile.nq && d < hd ? load_f32(p.q, p.q_dtype, q_row + d) : 0.0f;
    acc[j] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const bool round_p = p.v_dtype != DType::kF32;

  for (int k0 = tile.k_begin; k0 < tile.k_end; k0 += kKeysCc) {
    const int nk = min(kKeysCc, tile.k_end - k0);
    __syncthreads();  // the previous tile is no longer read
    for (int e = threadIdx.x; e < kKeysCc * hd; e += kThreads) {
      const int key = e / hd, d = e % hd;
      float kv = 0.0f, vv = 0.0f;
      if (key < nk) {
        kv = load_f32(p.k, p.k_dtype, int64_t(k0 + key) * p.k_t + int64_t(head) * p.k_h + d);
        vv = load_f32(p.v, p.v_dtype, int64_t(k0 + key) * p.v_t + int64_t(head) * p.v_h + d);
      }
      ks[key][d] = kv;
      vs[key][d] = vv;
    }
    __syncthreads();

    float s[kKeysCc];
    float mx = m;
#pragma unroll
    for (int key = 0; key < kKeysCc; ++key) {
      float dot = 0.0f;
#pragma unroll
      for (int j = 0; j < kDimsPerLane; ++j) {
        const int d = g + kLanesPerRow * j;
        if (d < hd) dot += q[j] * ks[key][d];
      }
      dot += __shfl_xor_sync(0xffffffffu, dot, 1);
      dot += __shfl_xor_sync(0xffffffffu, dot, 2);
      dot += __shfl_xor_sync(0xffffffffu, dot, 4);
      s[key] = key < nk ? dot * p.scale_log2 : -INFINITY;
      mx = fmaxf(mx, s[key]);
    }
    const float corr = exp2f(m - mx);  // 0 on the first tile (m = -inf, mx finite)
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kDimsPerLane; ++j) acc[j] *= corr;
#pragma unroll
    for (int key = 0; key < kKeysCc; ++key) {
      const float pr = exp2f(s[key] - mx);
      sum += pr;
      const float pv = round_p ? round_to(pr, p.v_dtype) : pr;
#pragma unroll
      for (int j = 0; j < kDimsPerLane; ++j) {
        const int d = g + kLanesPerRow * j;
        if (d < hd) acc[j] += pv * vs[key][d];
      }
    }
    l = l * corr + sum;
    m = mx;
  }

  if (r >= tile.nq) return;
  const float inv = 1.0f / l;
  const int64_t o_row = int64_t(tile.q0 + r) * p.o_t + int64_t(head) * p.o_h;
#pragma unroll
  for (int j = 0; j < kDimsPerLane; ++j) {
    const int d = g + kLanesPerRow * j;
    if (d < hd) store_f32(p.out, p.out_dtype, o_row + d, acc[j] * inv);
  }
}

}  // namespace

void launch_cuda_cores(const Params& p, int num_tiles, int heads, cudaStream_t stream) {
  const dim3 grid{unsigned(heads), unsigned(num_tiles)};
  segment_attention_cuda_cores_kernel<<<grid, kThreads, 0, stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("segment_attention_cuda_cores_kernel");
}

}  // namespace vt::cuda::segattn
