// chunk_scan_tc (delta_rule_chunked.cuh): chunk_scan's job on tensor cores with 3xTF32
// products (chunk_mma.cuh), one CTA of 8 warps per (32-column slice, value head,
// request), the grid and the short-request recurrence of chunk_scan. The [Dk, 32] f32
// state slice lives in shared memory over the request's chunks of the pass; per chunk:
//   R      = [W; q] S, 128 x 32 x 128: warp w the 16 rows 16w.. (warps 0-3 W, 4-7 q);
//   U'     = U - R_W in place; scale e^gam R_q into o_s;
//   out    = o_s + P U', 64 x 32 x (to the diagonal): warp w the 8 columns 8 (w % 4)..
//          of row blocks w / 4 and 3 - w / 4 (equal work: P is zero above the diagonal);
//   S      <- e^{gam_last} S + (diag(e^{gam_last - gam}) K)^T U', 128 x 32 x 64: warp w
//          state rows 16w.., the decay applied as the k fragments load.
// Everything a chunk reads comes from the scratch (chunk_wy_tc wrote W, U, P, gam and the
// q and k rows as f32) by cp.async, in two groups a step ahead: A = W and q rows (read
// by R only) lands while the previous chunk computes U', out and S; B = k rows, P, the
// U slice and gam lands while this chunk computes R. The out and state steps read only
// U', P, o_s and k_s and write disjoint places, so one barrier ends the chunk.
// Shared memory 161 KB (one CTA per SM), 153 registers.
// FLOPs per (chunk, head, slice), Dk = Dv = 128, as run (each mma three times):
// 128 x 32 x 128 x 2 (R) + 16 x 32 x (16 + 32 + 48 + 64) x 2 (out) + 128 x 32 x 64 x 2
// (state) ~ 1.7 M.
#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn/chunk_mma.cuh"
#include "vt/cuda/gdn/chunk_recurrence.cuh"
#include "vt/cuda/gdn/delta_rule_chunked.cuh"
#include "vt/cuda/ptx.cuh"

namespace vt::cuda::gdn_chunk {

namespace {

using ptx::cp_async16;
using ptx::cp_async_commit;
using ptx::cp_async_wait;
using ptx::smem_addr;

constexpr int kWQStride = kDK + 4;    // wq_s rows (A loads)
constexpr int kKStride = kDK + 8;     // k_s rows (transposed A loads)
constexpr int kSStride = kCols + 8;   // s_s, u_s, o_s rows (B loads, C stores)
constexpr int kPStride = kChunk + 4;  // p_s rows (A loads)
constexpr int kSmemFloats = kDK * kSStride + 2 * kChunk * kWQStride + kChunk * kSStride +
                            kChunk * kKStride + kChunk * kPStride + kChunk * kSStride + kChunk;
static_assert(kCols == 32 && kWarps == 8 && kChunk == 64 && kDK == 128,
              "chunk_scan_tc: the warp tiling assumes 8 warps, 32 columns, 64 x 128");
static_assert(kWQStride % 32 == 4 && kKStride % 32 == 8 && kSStride % 32 == 8 && kPStride % 32 == 4,
              "chunk_scan_tc: conflict-free fragment strides");

// The chunk's W and q rows (group A) or its k rows, P, U slice and gam (group B), from
// the scratch into shared memory by 16-byte copies, committed as one cp.async group.
__device__ void stage_wq(const float* scr, float* wq_s) {
  for (int idx = threadIdx.x; idx < 2 * kChunk * kDK / 4; idx += kThreads) {
    const int i = idx / (kDK / 4), c4 = idx % (kDK / 4);  // rows 64.. are the q rows
    const float* src = i < kChunk ? scr + i * kDK : scr + kQOffset + (i - kChunk) * kDK;
    cp_async16(smem_addr(wq_s + i * kWQStride + 4 * c4), src + 4 * c4, true);
  }
  cp_async_commit();
}
__device__ void stage_kpu(const float* scr, int col0, float* k_s, float* p_s, float* u_s,
                          float* gam_s) {
  const int tid = threadIdx.x;
  for (int idx = tid; idx < kChunk * kDK / 4; idx += kThreads) {
    const int i = idx / (kDK / 4), c4 = idx % (kDK / 4);
    cp_async16(smem_addr(k_s + i * kKStride + 4 * c4), scr + kKOffset + i * kDK + 4 * c4, true);
  }
  for (int idx = tid; idx < kChunk * kChunk / 4; idx += kThreads) {
    const int i = idx / (kChunk / 4), c4 = idx % (kChunk / 4);
    cp_async16(smem_addr(p_s + i * kPStride + 4 * c4),
               scr + kWFloats + kUFloats + i * kChunk + 4 * c4, true);
  }
  for (int idx = tid; idx < kChunk * kCols / 4; idx += kThreads) {
    const int i = idx / (kCols / 4), c4 = idx % (kCols / 4);
    cp_async16(smem_addr(u_s + i * kSStride + 4 * c4),
               scr + kWFloats + int64_t(i) * kDV + col0 + 4 * c4, true);
  }
  if (tid < kChunk / 4)
    cp_async16(smem_addr(gam_s + 4 * tid), scr + kWFloats + kUFloats + kPFloats + 4 * tid, true);
  cp_async_commit();
}

__global__ void __launch_bounds__(kThreads, 1) chunk_scan_tc_kernel(Params p) {
  extern __shared__ float4 smem4[];
  float* s_s = reinterpret_cast<float*>(smem4);  // [kDK][kSStride] state slice
  float* wq_s = s_s + kDK * kSStride;            // [2 kChunk][kWQStride] W rows, q rows
  float* o_s = wq_s + 2 * kChunk * kWQStride;    // [kChunk][kSStride] scale e^gam q S
  float* k_s = o_s + kChunk * kSStride;          // [kChunk][kKStride] k rows
  float* p_s = k_s + kChunk * kKStride;          // [kChunk][kPStride] P
  float* u_s = p_s + kChunk * kPStride;          // [kChunk][kSStride] U, then U'
  float* gam_s = u_s + kChunk * kSStride;        // [kChunk]
  const int tid = threadIdx.x, warp = tid / kWarp;
  const int h = blockIdx.y, b = blockIdx.z;
  const int col0 = blockIdx.x * kCols;  // the slice's first value column
  float* state_g = p.state + (int64_t(p.slot[b]) * p.hv + h) * p.dk * p.dv;
  const PassRange range = pass_range(p, b);
  const int c_begin = range.begin, c_end = range.end;
  if (c_begin >= c_end) {
    const int t0 = p.start[b], len = p.start[b + 1] - t0;
    if (range.runs_recurrence(p, len)) token_recurrence(p, t0, len, state_g, wq_s, k_s);
    return;
  }
  stage_wq(chunk_scratch(p, c_begin, h), wq_s);
  stage_kpu(chunk_scratch(p, c_begin, h), col0, k_s, p_s, u_s, gam_s);
  for (int idx = tid; idx < kDK * kCols; idx += kThreads) {
    const int d = idx / kCols, c = idx % kCols;
    s_s[d * kSStride + c] =
        d < p.dk && col0 + c < p.dv ? state_g[int64_t(d) * p.dv + col0 + c] : 0.0f;
  }
  const int g = mma3::lane_g(), t = mma3::lane_t();

  // Pending cp.async groups at the top of chunk ch: A(ch), B(ch), in that order.
  for (int ch = c_begin; ch < c_end; ++ch) {
    const int t0 = p.chunk_t0[ch], n = p.chunk_len[ch];
    cp_async_wait<1>();  // A(ch) landed (B(ch) may still fly)
    __syncthreads();

    // R = [W; q] S: this warp's 16 rows x 32 columns.
    float acc[4][4] = {}, acc_lo[4][4] = {};
    {
      const float* a_rows = wq_s + warp * 16 * kWQStride;
#pragma unroll 2
      for (int k0 = 0; k0 < kDK; k0 += 8) {
        mma3::FragA a;
        mma3::load_a(a, a_rows + k0, kWQStride);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          mma3::FragB bf;
          mma3::load_b(bf, s_s + k0 * kSStride + nt * 8, kSStride);
          mma3::mma_split(acc[nt], acc_lo[nt], a, bf);
        }
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[nt][r] += acc_lo[nt][r];
    }
    cp_async_wait<0>();  // B(ch) landed
    __syncthreads();     // ... for every thread; every warp is done reading wq_s
    if (ch + 1 < c_end)
      stage_wq(chunk_scratch(p, ch + 1, h), wq_s);  // A(ch + 1) flies over the rest
    if (warp < 4) {                                 // U' = U - W S
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int i = warp * 16 + g + (r / 2) * 8, c = nt * 8 + 2 * t + r % 2;
          u_s[i * kSStride + c] -= acc[nt][r];
        }
    } else {  // scale e^gam q S
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = (warp - 4) * 16 + g + (r / 2) * 8;
        const float f = p.scale * expf(gam_s[i]);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) o_s[i * kSStride + nt * 8 + 2 * t + r % 2] = acc[nt][r] * f;
      }
    }
    __syncthreads();  // U' and o_s complete

    // out = o_s + P U' for n-tile w % 4 of row blocks w / 4 and 3 - w / 4.
    {
      const int nt = warp % 4;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int mt = half == 0 ? warp / 4 : 3 - warp / 4;
        float o[4], o_lo[4] = {};
#pragma unroll
        for (int r = 0; r < 4; ++r)
          o[r] = o_s[(mt * 16 + g + (r / 2) * 8) * kSStride + nt * 8 + 2 * t + r % 2];
        for (int k0 = 0; k0 < (mt + 1) * 16; k0 += 8) {  // P is zero past the diagonal block
          mma3::FragA a;
          mma3::FragB bf;
          mma3::load_a(a, p_s + mt * 16 * kPStride + k0, kPStride);
          mma3::load_b(bf, u_s + k0 * kSStride + nt * 8, kSStride);
          mma3::mma_split(o, o_lo, a, bf);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) o[r] += o_lo[r];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int i = mt * 16 + g + (r / 2) * 8, col = col0 + nt * 8 + 2 * t + r % 2;
          if (i < n && col < p.dv)
            store_f32(p.out, p.out_dtype, ((int64_t(t0) + i) * p.hv + h) * p.dv + col, o[r]);
        }
      }
    }

    // S <- e^{gam_last} S + K_d^T U' for state rows 16w..16w+15.
    {
      const float last = gam_s[kChunk - 1];  // gam is flat past the chunk's end
      const float decay = expf(last);
      const int d0 = warp * 16;
      float s_acc[4][4], s_lo[4][4] = {};
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          s_acc[nt][r] = decay * s_s[(d0 + g + (r / 2) * 8) * kSStride + nt * 8 + 2 * t + r % 2];
#pragma unroll 2
      for (int k0 = 0; k0 < kChunk; k0 += 8) {
        mma3::FragA a;
        mma3::load_a_trans(a, k_s + k0 * kKStride + d0, kKStride, expf(last - gam_s[k0 + t]),
                           expf(last - gam_s[k0 + t + 4]));
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          mma3::FragB bf;
          mma3::load_b(bf, u_s + k0 * kSStride + nt * 8, kSStride);
          mma3::mma_split(s_acc[nt], s_lo[nt], a, bf);
        }
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r) s_acc[nt][r] += s_lo[nt][r];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          s_s[(d0 + g + (r / 2) * 8) * kSStride + nt * 8 + 2 * t + r % 2] = s_acc[nt][r];
    }
    __syncthreads();  // k_s, p_s, u_s, gam_s free; the next R reads all of s_s
    if (ch + 1 < c_end) stage_kpu(chunk_scratch(p, ch + 1, h), col0, k_s, p_s, u_s, gam_s);
  }
  for (int idx = tid; idx < kDK * kCols; idx += kThreads) {
    const int d = idx / kCols, c = idx % kCols;
    if (d < p.dk && col0 + c < p.dv) state_g[int64_t(d) * p.dv + col0 + c] = s_s[d * kSStride + c];
  }
}

}  // namespace

void launch_chunk_scan_tc(const Params& p, cudaStream_t stream) {
  constexpr int smem = kSmemFloats * int(sizeof(float));
  VT_CUDA_CHECK(cudaFuncSetAttribute(chunk_scan_tc_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(unsigned((p.dv + kCols - 1) / kCols), unsigned(p.hv), unsigned(p.batch));
  chunk_scan_tc_kernel<<<grid, kThreads, smem, stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("chunk_scan_tc_kernel");
}

}  // namespace vt::cuda::gdn_chunk
