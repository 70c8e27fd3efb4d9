// The tensor-core paged attention kernel for decode steps (CUDA sources only): every
// request has one query token, so a CTA's query rows are the query heads of one kv
// head (a GQA group, up to 16: one mma M tile, zero rows past the group) and the work
// is streaming that head's K and V once. Templated on head_dim D and the 16-bit type T
// (q, caches and out all T; the rule is in vt/cuda/attention.h).
//
// Work: a CTA (kWarps warps) takes (request b, kv head g, split z of the keys). The
// split's keys run through shared memory in tiles of kKeys, a kStages-deep cp.async
// ring (16-byte copies through the block table; 2 tiles in flight while one is
// computed). Warp w takes keys 16w .. 16w + 15 of every tile against all 16 query
// rows, with its own online softmax (running max m, partial sums l, accumulator O
// [16, D] in mma C fragments):
//   S = Q K^T   ldmatrix Q (A, from shared memory, as flash_prefill.cuh) and K (B);
//   softmax     base 2, keys past the split's end -inf (last tile only);
//   O += P V    P rounded to T from the S accumulators (A operand), V by ldmatrix.trans.
// At the end the four warps' (m, l, O) merge through shared memory (the ring's space):
// O = sum_w O_w 2^(m_w - M), l = sum_w l_w 2^(m_w - M), M = max_w m_w. A request whose
// keys fit in one split writes out = O / l rounded once; otherwise the CTA writes O, M
// and l to the f32 workspace and paged_attention.cu's decode_combine_kernel merges the
// request's splits. How many splits a request takes is decided here, per request, from
// its seq_len (request_split): the grid's split count is only the host's bound. The
// rounding of p is against the warp's running max (as a split's against its own:
// vt/ops/attention.h allows a running max). Shared memory is the swizzled layout of
// kv_tiles.cuh (chunk c of row r at c ^ (r & 7)), the ring filled by its PagedKvTiles.
// Padded (launch<D, T, true>): rows hold p.head_dim elements, a multiple of 8 up to D;
// chunks past it are zero-filled on load, k-steps wholly past it skipped, and dims past
// it never written (as flash_prefill.cuh). Without Padded, head_dim is D.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "vt/cuda/attention/flash_prefill.cuh"
#include "vt/cuda/attention/kv_tiles.cuh"
#include "vt/cuda/attention/paged_attention.cuh"

namespace vt::cuda::decode {

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * kWarp;
inline constexpr int kRows = 16;           // query heads per CTA (one mma M)
inline constexpr int kKeys = kWarps * 16;  // keys per tile, 16 per warp
inline constexpr int kStages = 3;          // tiles in the cp.async ring
inline constexpr int kSplitAlign = kKeys;  // a split's key count is a multiple of this
// A request's keys are split only in runs of at least this many: the kStages - 1 = 2
// tiles the prologue puts in flight, so such a split costs one memory round trip, and
// a shorter one would spend more on its prologue, merge and workspace than on keys.
inline constexpr int kMinSplitKeys = (kStages - 1) * kKeys;

// The split of one request's keys: `count` splits of `keys` keys (the last one shorter),
// count = ceil(seq_len / kMinSplitKeys) clamped to [1, max_splits], the keys dealt
// evenly in multiples of kSplitAlign. max_splits is the grid's split count, which the
// host sizes from bounds (a graph's max context); the request's real seq_len, read on the
// device, picks how many of those CTAs work, so a graph captured for a long context
// still runs a short one unsplit, and the kernel and the combine agree on the split.
struct RequestSplit {
  int keys, count;
};
__host__ __device__ inline RequestSplit request_split(int seq_len, int max_splits) {
  int count = (seq_len + kMinSplitKeys - 1) / kMinSplitKeys;
  count = count < 1 ? 1 : (count > max_splits ? max_splits : count);
  int keys = (seq_len + count - 1) / count;
  keys = keys < kSplitAlign ? kSplitAlign : (keys + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
  count = seq_len <= keys ? 1 : (seq_len + keys - 1) / keys;
  return {keys, count};
}

// q tile + the K/V ring, in bytes; the merge buffer (f32 [kWarps][kRows][D] + m, l)
// reuses the ring.
template <int D>
constexpr int smem_bytes() {
  return (kRows + 2 * kStages * kKeys) * D * 2;
}
template <int D>
constexpr int merge_bytes() {
  return kWarps * kRows * (D + 2) * 4;
}

// Runs paged_decode_kernel<D, T, Padded> over batch requests (instantiated per D in
// paged_decode_d*.cu).
template <int D, class T, bool Padded>
void launch(const paged::Params& p, int batch, cudaStream_t stream);

template <int D, class T, bool Padded>
__global__ void __launch_bounds__(kThreads) paged_decode_kernel(paged::Params p) {
  using namespace flash::detail;
  const int dim = Padded ? p.head_dim : D;  // elements per row
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  static_assert(D % 16 == 0 && kChunks >= 8, "tile shape");
  static_assert(merge_bytes<D>() <= 2 * kStages * kKeys * D * 2, "merge buffer fits the ring");
  extern __shared__ __align__(128) unsigned char smem[];
  T* q_tile = reinterpret_cast<T*>(smem);
  T* k_ring = q_tile + kRows * D;
  T* v_ring = k_ring + kStages * kKeys * D;

  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int quad_row = lane / 4, quad_col = 2 * (lane % 4);  // C-fragment coordinates
  const int b = blockIdx.x, split = blockIdx.z;
  const int g = blockIdx.y / p.head_chunks, head0 = (blockIdx.y % p.head_chunks) * p.heads_per_cta;
  const int t = p.query_start[b];
  if (p.query_start[b + 1] - t != 1) return;  // no token (or not a decode: not this kernel's)
  const int seq_len = p.seq_lens[b];
  const int heads = min(p.heads_per_cta, p.group - head0);  // real rows of the tile
  const RequestSplit rs = request_split(seq_len, p.splits);
  const int k_begin = split * rs.keys;
  const int k_end = min(seq_len, k_begin + rs.keys);
  const bool single = rs.count == 1;  // this request's only split writes out itself
  if (seq_len <= 0) {  // no key (never a valid request): a finite zero row, not NaN
    if (split == 0)
      for (int i = threadIdx.x; i < heads * dim; i += kThreads)
        static_cast<T*>(p.out)[int64_t(t) * p.out_t +
                               int64_t(g * p.group + head0 + i / dim) * p.out_h + i % dim] =
            from_float<T>(0.0f);
    return;
  }
  if (split >= rs.count) return;  // a split past the request's (launch shaped by bounds)

  const T* q = static_cast<const T*>(p.q);
  for (int c = threadIdx.x; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bool real = r < heads && (!Padded || col < dim);
    const T* src =
        real ? q + int64_t(t) * p.q_t + int64_t(g * p.group + head0 + r) * p.q_h + col : q;
    cp_async16(smem_addr(q_tile + swz<D>(r, col)), src, real);
  }

  const kv_tiles::PagedKvTiles<D, kKeys, kThreads, T, Padded> kv(p, b, g, k_end);
  auto load_kv = [&](int kt, int stage) {
    kv.load(kt, k_ring + stage * kKeys * D, v_ring + stage * kKeys * D);
  };

  float acc[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  // The ring: group i holds tile i (group 0 also the query rows); a group is committed
  // every iteration, empty past the last tile, so "all but the newest kStages - 2
  // groups landed" always means tile `it` is in.
  const int n_tiles = (k_end - k_begin + kKeys - 1) / kKeys;
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if (i < n_tiles) load_kv(k_begin + i * kKeys, i);
    cp_async_commit();
  }
  const int kb = warp * 16;  // the warp's keys within a tile
  for (int it = 0; it < n_tiles; ++it) {
    const int kt = k_begin + it * kKeys, stage = it % kStages;
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile it visible to every warp; tile it - 1's stage is free
    if (it + kStages - 1 < n_tiles)
      load_kv(kt + (kStages - 1) * kKeys, (it + kStages - 1) % kStages);
    cp_async_commit();

    // S = Q K^T for the 16 rows and the warp's 16 keys.
    const T* ks = k_ring + stage * kKeys * D;
    float s[2][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      if (Padded && kk * 16 >= dim) break;  // zeros from here on
      uint32_t a[4], bk[4];
      ldmatrix_x4(a, smem_addr(q_tile + swz<D>(lane % 16, kk * 16 + 8 * (lane / 16))));
      ldmatrix_x4(bk, smem_addr(ks + swz<D>(kb + lane % 8 + 8 * (lane / 16),
                                            kk * 16 + 8 * ((lane / 8) % 2))));
      mma_m16n8k16(s[0], a, bk[0], bk[1], T());
      mma_m16n8k16(s[1], a, bk[2], bk[3], T());
    }

    // Online softmax in base 2 over the warp's keys; s becomes p.
    const bool masked = kt + kKeys > k_end;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float mx = m[i];
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float x = s[n][2 * i + e] * p.scale_log2;
          if (masked && kt + kb + n * 8 + quad_col + e >= k_end) x = -INFINITY;
          s[n][2 * i + e] = x;
          mx = fmaxf(mx, x);
        }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // No visible key yet (the warp's keys of a last tile are all past the end):
      // m stays -inf and the keys contribute nothing.
      const float corr = mx == -INFINITY ? 1.0f : exp2f(m[i] - mx);
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float pr = mx == -INFINITY ? 0.0f : exp2f(s[n][2 * i + e] - mx);
          sum += pr;
          s[n][2 * i + e] = pr;
        }
      l[i] = l[i] * corr + sum;  // this thread's keys; the quad is summed at the end
      m[i] = mx;
      if (__any_sync(0xffffffffu, corr != 1.0f)) {
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          acc[n][2 * i] *= corr;
          acc[n][2 * i + 1] *= corr;
        }
      }
    }

    // O += P V: P (rounded to T: vt/ops/attention.h) as A, V as B via ldmatrix.trans.
    const T* vs = v_ring + stage * kKeys * D;
    const uint32_t a[4] = {pack2(s[0][0], s[0][1], T()), pack2(s[0][2], s[0][3], T()),
                           pack2(s[1][0], s[1][1], T()), pack2(s[1][2], s[1][3], T())};
#pragma unroll
    for (int n2 = 0; n2 < D / 16; ++n2) {
      if (Padded && n2 * 16 >= dim) break;  // V is zero from here on
      uint32_t bv[4];
      ldmatrix_x4_trans(bv, smem_addr(vs + swz<D>(kb + lane % 8 + 8 * ((lane / 8) % 2),
                                                  n2 * 16 + 8 * (lane / 16))));
      mma_m16n8k16(acc[2 * n2], a, bv[0], bv[1], T());
      mma_m16n8k16(acc[2 * n2 + 1], a, bv[2], bv[3], T());
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the ring: it becomes the merge buffer

  // Merge the warps: red_o [kWarps][kRows][D], red_ml [kWarps][kRows][2].
  float* red_o = reinterpret_cast<float*>(k_ring);
  float* red_ml = red_o + kWarps * kRows * D;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    const int r = quad_row + 8 * i;
    float* o = red_o + (warp * kRows + r) * D;
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      *reinterpret_cast<float2*>(o + n * 8 + quad_col) =
          make_float2(acc[n][2 * i], acc[n][2 * i + 1]);
    if (lane % 4 == 0) {
      red_ml[(warp * kRows + r) * 2] = m[i];
      red_ml[(warp * kRows + r) * 2 + 1] = l[i];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < heads * D; i += kThreads) {
    const int r = i / D, e = i % D;
    if (Padded && e >= dim) continue;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, red_ml[(w * kRows + r) * 2]);
    float o = 0.0f, lsum = 0.0f;  // the split has a key, so mx is finite
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float mw = red_ml[(w * kRows + r) * 2];
      const float f = mw == -INFINITY ? 0.0f : exp2f(mw - mx);
      o += red_o[(w * kRows + r) * D + e] * f;
      lsum += red_ml[(w * kRows + r) * 2 + 1] * f;
    }
    const int h = g * p.group + head0 + r;
    if (single) {
      static_cast<T*>(p.out)[int64_t(t) * p.out_t + int64_t(h) * p.out_h + e] =
          from_float<T>(o / lsum);
    } else {
      const int64_t row = int64_t(split) * p.tokens * p.hq + int64_t(t) * p.hq + h;
      p.ws_acc[row * dim + e] = o;
      if (e == 0) {
        p.ws_ml[row * 2] = mx;
        p.ws_ml[row * 2 + 1] = lsum;
      }
    }
  }
}

}  // namespace vt::cuda::decode
