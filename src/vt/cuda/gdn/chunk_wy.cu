// chunk_wy (delta_rule_chunked.cuh): the state-free part of a chunk, one CTA of 256
// threads per (chunk of the pass, value head); CTAs past the call's chunk count (the
// pass was sized by a bound) exit.
//   1. k and scale*q of the chunk's key head into shared memory (zero past the chunk
//      and past dk), g and beta; gam by a serial prefix sum (the CPU's order).
//   2. The Gram tiles K K^T and Q K^T together: thread (ty, tx) of a 16 x 16 grid
//      holds rows ty + 16a and columns tx + 16b (a, b < 4), so a warp reads one k row
//      per step as broadcasts and 16 others from distinct banks (rows padded to 129).
//      Decayed and masked, K K^T becomes L (shared memory), Q K^T becomes P (scratch).
//   3. (I + L) X = [diag(beta e^gam) K | diag(beta) V] by forward substitution:
//      columns are independent, so thread c owns column c of X in 64 registers and
//      reads L as broadcasts; no barrier inside the solve.
// FLOPs per (chunk, head), Dk = Dv = 128: 2 x 64^2 x 128 x 2 (Gram) + 64 x 63 / 2 x
// 256 x 2 (solve) ~ 3.1 M.
#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn/delta_rule_chunked.cuh"

namespace vt::cuda::gdn_chunk {

namespace {

constexpr int kKStride = kDK + 1;
constexpr int kSmemFloats = 2 * kChunk * kKStride + kChunk * kChunk + 2 * kChunk;
static_assert(kThreads == kDK + kDV, "chunk_wy: one thread per column of [W | U]");
static_assert(kThreads == 256 && kChunk == 64, "chunk_wy: the Gram tiling assumes 16 x 16 x (4 x 4)");

__global__ void __launch_bounds__(kThreads) chunk_wy_kernel(Params p) {
  extern __shared__ float smem[];
  float* k_s = smem;                     // [kChunk][kKStride] k rows
  float* q_s = k_s + kChunk * kKStride;  // [kChunk][kKStride] scale * q rows
  float* l_s = q_s + kChunk * kKStride;  // [kChunk][kChunk] L, zero on and above the diagonal
  float* gam_s = l_s + kChunk * kChunk;  // [kChunk]
  float* beta_s = gam_s + kChunk;        // [kChunk], zero past the chunk
  const int tid = threadIdx.x, h = blockIdx.y;
  const int chunk = p.pass_begin + int(blockIdx.x);
  if (chunk >= p.first_chunk[p.batch]) return;  // the pass was sized by a bound
  const int t0 = p.chunk_t0[chunk], n = p.chunk_len[chunk], hk = h / p.ratio;
  float* scr = chunk_scratch(p, chunk, h);

  for (int idx = tid; idx < kChunk * kDK; idx += kThreads) {
    const int i = idx / kDK, d = idx % kDK;
    const bool live = i < n && d < p.dk;
    const int64_t t = int64_t(t0) + i;
    k_s[i * kKStride + d] = live ? load_f32(p.k, p.k_dtype, t * p.k_t + hk * p.k_h + d) : 0.0f;
    q_s[i * kKStride + d] =
        live ? load_f32(p.q, p.q_dtype, t * p.q_t + hk * p.q_h + d) * p.scale : 0.0f;
  }
  if (tid < kChunk) {
    const bool live = tid < n;
    gam_s[tid] = live ? p.g[(int64_t(t0) + tid) * p.hv + h] : 0.0f;
    beta_s[tid] = live ? p.beta[(int64_t(t0) + tid) * p.hv + h] : 0.0f;
  }
  __syncthreads();
  if (tid == 0) {
    float cum = 0.0f;
    for (int i = 0; i < kChunk; ++i) gam_s[i] = cum += gam_s[i];
  }
  __syncthreads();

  {
    const int ty = tid / 16, tx = tid % 16;
    float kk[4][4] = {}, qk[4][4] = {};
#pragma unroll 4
    for (int d = 0; d < kDK; ++d) {
      float ki[4], qi[4], kj[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        ki[a] = k_s[(ty + 16 * a) * kKStride + d];
        qi[a] = q_s[(ty + 16 * a) * kKStride + d];
        kj[a] = k_s[(tx + 16 * a) * kKStride + d];
      }
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          kk[a][b] += ki[a] * kj[b];
          qk[a][b] += qi[a] * kj[b];
        }
    }
    float* p_g = scr + kWFloats + kUFloats;
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int i = ty + 16 * a, j = tx + 16 * b;
        const float decay = j <= i ? expf(gam_s[i] - gam_s[j]) : 0.0f;
        l_s[i * kChunk + j] = j < i ? beta_s[i] * kk[a][b] * decay : 0.0f;
        p_g[i * kChunk + j] = qk[a][b] * decay;
      }
  }
  __syncthreads();

  // Column c of the right-hand side: of W (c < kDK) or of U (c - kDK).
  const int c = tid;
  float x[kChunk];
  if (c < kDK) {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) x[i] = beta_s[i] * expf(gam_s[i]) * k_s[i * kKStride + c];
  } else {
    const int e = c - kDK;
    const bool live_col = e < p.dv;
#pragma unroll
    for (int i = 0; i < kChunk; ++i)
      x[i] = live_col && i < n
                 ? beta_s[i] * load_f32(p.v, p.v_dtype,
                                        (int64_t(t0) + i) * p.v_t + int64_t(h) * p.v_h + e)
                 : 0.0f;
  }
  // Row i: x_i -= sum_{j < i} L_ij x_j, two accumulators to halve the dependent chain.
#pragma unroll
  for (int i = 1; i < kChunk; ++i) {
    float acc0 = 0.0f, acc1 = 0.0f;
#pragma unroll
    for (int j = 0; j < i; ++j) {
      if (j % 2 == 0)
        acc0 += l_s[i * kChunk + j] * x[j];
      else
        acc1 += l_s[i * kChunk + j] * x[j];
    }
    x[i] -= acc0 + acc1;
  }
  float* col = c < kDK ? scr + c : scr + kWFloats + (c - kDK);
  const int row_stride = c < kDK ? kDK : kDV;
#pragma unroll
  for (int i = 0; i < kChunk; ++i) col[i * row_stride] = x[i];
  if (tid < kChunk) scr[kWFloats + kUFloats + kPFloats + tid] = gam_s[tid];
}

}  // namespace

void launch_chunk_wy(const Params& p, cudaStream_t stream) {
  constexpr int smem = kSmemFloats * int(sizeof(float));
  VT_CUDA_CHECK(
      cudaFuncSetAttribute(chunk_wy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  chunk_wy_kernel<<<dim3(unsigned(p.pass_chunks), unsigned(p.hv)), kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("chunk_wy_kernel");
}

}  // namespace vt::cuda::gdn_chunk
