// chunk_wy_tc (delta_rule_chunked.cuh): chunk_wy's job (W, U, P, gam, plus the chunk's
// q and k rows for chunk_scan_tc) on tensor cores with 3xTF32 products (chunk_mma.cuh),
// one CTA of 8 warps per (chunk of the pass, value head); CTAs past the call's chunk
// count exit.
//   1. k and q rows into shared memory and the scratch (zero past the chunk and past
//      dk), g and beta; gam by a serial prefix sum (the CPU's order); the v part of the
//      right-hand side X = [diag(beta e^gam) K | diag(beta) V] starts loading into
//      registers (thread c holds column c).
//   2. K K^T and Q K^T by 16x8 tiles on or below the diagonal (20 per matrix, spread
//      over the warps; one tf32 mma per product when q and k are bf16 or f16, exact in
//      tf32); decayed and masked into L (shared memory) and P (scratch, scaled by
//      `scale`, zero above the diagonal). Then X's W part from k_s, and X goes to
//      shared memory over k_s and q_s.
//   3. (I + L) X = RHS by 16-row blocks: X_b -= L_{b,<b} X_{<b} (a 16 x 256 x 16b mma
//      product), then the unit 16 x 16 diagonal block by forward substitution, one
//      column per thread. Warp w owns columns 32w..32w+31 in both steps, so the solve
//      needs no CTA barrier; each thread then writes its column of W or U.
// Shared memory 85.5 KB, 121 registers: two CTAs per SM. Row strides padded to the
// fragment loaders' conflict-free residues (chunk_mma.cuh).
// FLOPs per (chunk, head), Dk = Dv = 128, as run: 20 x 2 tiles of 16 x 8 x 128 x 2
// (Gram, 1.3 M, three mma each, one at bf16/f16 q and k) + 16 x 256 x (16 + 32 + 48)
// x 2 (block updates, 0.8 M, three mma each) + 4 x 120 x 256 x 2 (diagonal blocks,
// 0.25 M, CUDA cores).
#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn/chunk_mma.cuh"
#include "vt/cuda/gdn/delta_rule_chunked.cuh"

namespace vt::cuda::gdn_chunk {

namespace {

constexpr int kBlock = 16;            // rows of a diagonal block of the solve
constexpr int kQKStride = kDK + 4;    // k_s, q_s rows (A and transposed-B loads)
constexpr int kLStride = kChunk + 4;  // l_s rows (A loads)
constexpr int kXCols = kDK + kDV;     // [W | U]
constexpr int kXStride = kXCols + 8;  // x_s rows (B loads)
constexpr int kWarpsWy = kThreads / kWarp;
constexpr int kColsPerWarp = kXCols / kWarpsWy;  // columns of X a warp owns
constexpr int kSmemFloats = 2 * kChunk * kQKStride + kChunk * kLStride + 2 * kChunk;
static_assert(kChunk * kXStride <= 2 * kChunk * kQKStride, "chunk_wy_tc: x_s fits over k_s, q_s");
static_assert(kThreads == kXCols, "chunk_wy_tc: one thread per column of [W | U]");
static_assert(kColsPerWarp == kWarp, "chunk_wy_tc: a warp owns the columns of its lanes");
static_assert(kChunk % kBlock == 0 && kDK % 8 == 0, "chunk_wy_tc: 16 x 8 x 8 tiles");
static_assert(kQKStride % 32 == 4 && kLStride % 32 == 4 && kXStride % 32 == 8,
              "chunk_wy_tc: conflict-free fragment strides");

__global__ void __launch_bounds__(kThreads, 2) chunk_wy_tc_kernel(Params p) {
  extern __shared__ float4 smem4[];
  float* k_s = reinterpret_cast<float*>(smem4);  // [kChunk][kQKStride] k rows
  float* q_s = k_s + kChunk * kQKStride;         // [kChunk][kQKStride] q rows
  float* x_s = k_s;  // [kChunk][kXStride] RHS, then [W | U], over k_s and q_s after the Gram
  float* l_s = q_s + kChunk * kQKStride;   // [kChunk][kLStride] L, zero on/above the diagonal
  float* gam_s = l_s + kChunk * kLStride;  // [kChunk]
  float* beta_s = gam_s + kChunk;          // [kChunk], zero past the chunk
  const int tid = threadIdx.x, warp = tid / kWarp, h = blockIdx.y;
  const int chunk = p.pass_begin + int(blockIdx.x);
  if (chunk >= p.first_chunk[p.batch]) return;  // the pass was sized by a bound
  const int t0 = p.chunk_t0[chunk], n = p.chunk_len[chunk], hk = h / p.ratio;
  float* scr = chunk_scratch(p, chunk, h);
  // bf16 and f16 values are exact in tf32 (8 and 11 significant bits of tf32's 11): their
  // residual halves are zero, so the Gram products need only the big x big mma.
  const bool narrow_qk = (p.q_dtype == DType::kBF16 || p.q_dtype == DType::kF16) &&
                         (p.k_dtype == DType::kBF16 || p.k_dtype == DType::kF16);

#pragma unroll 8  // loads in flight: this is latency, not bandwidth
  for (int idx = tid; idx < kChunk * kDK; idx += kThreads) {
    const int i = idx / kDK, d = idx % kDK;
    const bool live = i < n && d < p.dk;
    const int64_t t = int64_t(t0) + i;
    const float kv = live ? load_f32(p.k, p.k_dtype, t * p.k_t + hk * p.k_h + d) : 0.0f;
    const float qv = live ? load_f32(p.q, p.q_dtype, t * p.q_t + hk * p.q_h + d) : 0.0f;
    k_s[i * kQKStride + d] = kv;
    q_s[i * kQKStride + d] = qv;
    scr[kKOffset + idx] = kv;  // for chunk_scan_tc's cp.async staging
    scr[kQOffset + idx] = qv;
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

  // Column c = tid of the right-hand side, in registers until k_s and q_s are free: the
  // v part loads now (in flight over the Gram tiles), the W part after them.
  const int c = tid;
  float rhs[kChunk];
  if (c >= kDK) {
    const int e = c - kDK;
    const bool live_col = e < p.dv;
#pragma unroll
    for (int i = 0; i < kChunk; ++i)
      rhs[i] = live_col && i < n
                   ? beta_s[i] * load_f32(p.v, p.v_dtype,
                                          (int64_t(t0) + i) * p.v_t + int64_t(h) * p.v_h + e)
                   : 0.0f;
  }

  // The Gram tiles, 16 x 8: the 20 tiles (mt, nt) with nt <= 2 mt + 1 (row block mt
  // holds 2 mt + 2, from tile mt (mt + 1) of the list) to warp j % 8 for tile j; K K^T
  // and Q K^T share the B fragments. The 12 tiles above are zero (written by warp j % 8
  // for j = 20..31).
  {
    float* p_g = scr + kWFloats + kUFloats;
    const int g = mma3::lane_g(), t = mma3::lane_t();
    for (int job = warp; job < 32; job += kWarpsWy) {
      int mt, nt;
      if (job < 20) {
        mt = job < 2 ? 0 : job < 6 ? 1 : job < 12 ? 2 : 3;
        nt = job - mt * (mt + 1);
      } else {  // the zero tiles: row block 0 (6), 1 (4), 2 (2)
        const int z = job - 20;
        mt = z < 6 ? 0 : z < 10 ? 1 : 2;
        nt = mt == 0 ? 2 + z : mt == 1 ? 4 + (z - 6) : 6 + (z - 10);
      }
      const int m0 = mt * kBlock, n0 = nt * 8;
      float kk[4] = {}, qk[4] = {}, kk_lo[4] = {}, qk_lo[4] = {};
      if (job < 20 && narrow_qk) {  // q, k exact in tf32: one mma per product, same sums
#pragma unroll 4
        for (int d0 = 0; d0 < kDK; d0 += 8) {
          mma3::FragA ak, aq;
          mma3::FragB b;
          mma3::load_a(ak, k_s + m0 * kQKStride + d0, kQKStride);
          mma3::load_a(aq, q_s + m0 * kQKStride + d0, kQKStride);
          mma3::load_b_trans(b, k_s + n0 * kQKStride + d0, kQKStride);
          ptx::mma_m16n8k8_tf32(kk, ak.big, b.big);
          ptx::mma_m16n8k8_tf32(qk, aq.big, b.big);
        }
      } else if (job < 20) {
#pragma unroll 4
        for (int d0 = 0; d0 < kDK; d0 += 8) {
          mma3::FragA ak, aq;
          mma3::FragB b;
          mma3::load_a(ak, k_s + m0 * kQKStride + d0, kQKStride);
          mma3::load_a(aq, q_s + m0 * kQKStride + d0, kQKStride);
          mma3::load_b_trans(b, k_s + n0 * kQKStride + d0, kQKStride);
          mma3::mma_split(kk, kk_lo, ak, b);
          mma3::mma_split(qk, qk_lo, aq, b);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) kk[r] += kk_lo[r], qk[r] += qk_lo[r];
      }
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = m0 + g + (r / 2) * 8, j = n0 + 2 * t + r % 2;
        const float decay = j <= i ? expf(gam_s[i] - gam_s[j]) : 0.0f;
        l_s[i * kLStride + j] = j < i ? beta_s[i] * kk[r] * decay : 0.0f;
        p_g[i * kChunk + j] = p.scale * qk[r] * decay;
      }
    }
  }
  if (c < kDK) {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) rhs[i] = beta_s[i] * expf(gam_s[i]) * k_s[i * kQKStride + c];
  }
  __syncthreads();  // L complete; k_s and q_s read for the last time (x_s goes over them)
#pragma unroll
  for (int i = 0; i < kChunk; ++i) x_s[i * kXStride + c] = rhs[i];
  __syncwarp();

  // The blocked forward substitution on this warp's 32 columns of X.
  const int g = mma3::lane_g(), t = mma3::lane_t(), col0 = warp * kColsPerWarp;
  for (int blk = 0; blk < kChunk / kBlock; ++blk) {
    const int r0 = blk * kBlock;
    if (blk > 0) {  // X_b -= L[b, <b] X[<b], by 16 x 8 tiles over the warp's 4 n-tiles
      float acc[4][4] = {}, acc_lo[4][4] = {};
      for (int k0 = 0; k0 < r0; k0 += 8) {
        mma3::FragA a;
        mma3::load_a(a, l_s + r0 * kLStride + k0, kLStride);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          mma3::FragB b;
          mma3::load_b(b, x_s + k0 * kXStride + col0 + nt * 8, kXStride);
          mma3::mma_split(acc[nt], acc_lo[nt], a, b);
        }
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int i = r0 + g + (r / 2) * 8, j = col0 + nt * 8 + 2 * t + r % 2;
          x_s[i * kXStride + j] -= acc[nt][r] + acc_lo[nt][r];
        }
      __syncwarp();
    }
    // The unit lower-triangular diagonal block, column c in registers.
    float x[kBlock];
#pragma unroll
    for (int i = 0; i < kBlock; ++i) x[i] = x_s[(r0 + i) * kXStride + c];
#pragma unroll
    for (int i = 1; i < kBlock; ++i) {
      float acc = 0.0f;
#pragma unroll
      for (int j = 0; j < i; ++j) acc += l_s[(r0 + i) * kLStride + r0 + j] * x[j];
      x[i] -= acc;
    }
#pragma unroll
    for (int i = 0; i < kBlock; ++i) x_s[(r0 + i) * kXStride + c] = x[i];
    __syncwarp();
  }

  float* col = c < kDK ? scr + c : scr + kWFloats + (c - kDK);
  const int row_stride = c < kDK ? kDK : kDV;
  for (int i = 0; i < kChunk; ++i) col[i * row_stride] = x_s[i * kXStride + c];
  if (tid < kChunk) scr[kWFloats + kUFloats + kPFloats + tid] = gam_s[tid];
}

}  // namespace

void launch_chunk_wy_tc(const Params& p, cudaStream_t stream) {
  constexpr int smem = kSmemFloats * int(sizeof(float));
  VT_CUDA_CHECK(
      cudaFuncSetAttribute(chunk_wy_tc_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  chunk_wy_tc_kernel<<<dim3(unsigned(p.pass_chunks), unsigned(p.hv)), kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("chunk_wy_tc_kernel");
}

}  // namespace vt::cuda::gdn_chunk
