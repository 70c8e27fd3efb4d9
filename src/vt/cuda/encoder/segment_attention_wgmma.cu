// The wgmma kernel of segment_attention (vt/ops/encoder.h; sm_90a): non-causal flash
// attention over the host-built tile table (segment_attention.cuh's Tile and Params), on
// warpgroup MMAs, for bf16 or f16 q, k, v with head_dim in {64, 72, 80} and rows that
// cp.async can copy in 16-byte pieces.
//
// Work: a CTA of four warpgroups takes one tile (kWgmmaRows = 256 query rows of one
// segment) for one head; warpgroup g owns rows [64 g, 64 g + 64), warp w of it rows
// 16 w .. 16 w + 15 of those (each K/V tile copied to shared memory feeds 256 rows). Per
// key tile of 64 keys: S = Q K^T (wgmma m64n64k16, Q and K from shared memory, Dp / 16
// steps, Dp = head_dim rounded up to 16), the online softmax of segment_attention.cuh on
// S in registers (base 2, masked past the segment's end), P rounded to T as the A operand
// from registers, O += P V (wgmma m64nDnk16, Dn = head_dim rounded up to 8, V N-major
// from shared memory); the mma.sync kernel's numerics but for the softmax's exponent, one
// FFMA (s scale - m) where that kernel rounds s scale first. Software pipelined: S of the
// next key tile and P V of this one are in flight on the tensor cores while the next
// tile's softmax runs; O is rescaled after P V completes. Compiled for sm_90a only (the
// kernel traps elsewhere; wgmma_supports keeps it off other devices). Shared memory,
// every tile in core matrices of 8 rows x 8 elements (128 contiguous bytes, no swizzle):
// element (r, c) of a [rows][Dp] tile at byte
// ((r / 8) (Dp / 8) + c / 8) 128 + (r % 8) 16 + (c % 8) 2. Q [256][Dp], K and V
// [4 stages][64][Dp]: key tile t + 3 is copied (cp.async, zeros past the segment and past
// head_dim) while tile t's P V and tile t + 1's S run; one barrier per key tile. One CTA
// of 512 threads an SM (120 KB of shared memory at Dp 80, at most 128 registers a thread).
#include "vt/cuda/encoder/segment_attention.cuh"

namespace vt::cuda::segattn {

namespace {

constexpr int kWgRows = kWgmmaRows;      // query rows per CTA: 64 per warpgroup
constexpr int kWgThreads = 2 * kWgRows;  // 128 per warpgroup
constexpr int kWgCtasPerSm = 256 / kWgRows;
constexpr int kWgKeys = 64;   // keys per tile
constexpr int kWgStages = 4;  // K and V tiles in shared memory at once
static_assert(kWgRows % 128 == 0 && kWgRows <= 256, "two or four warpgroups");

template <int Dp>
constexpr int wg_smem_bytes() {
  return (kWgRows + 2 * kWgStages * kWgKeys) * Dp * 2;
}

// The 16-byte pieces of rows [row0, row0 + kRowsTile) of one head's [tokens, head_dim]
// view into the core-matrix tile at shared address dst (see above); rows at or past
// `valid` and columns at or past head_dim (a multiple of 8) are zero-filled. Thread t
// copies row (t / 4) % 64 of each 64-row block, 16-byte columns t % 4 + 4 m for
// m = g, g + G, ... (g = t / 256, G = kWgThreads / 256): four threads take 64 contiguous
// bytes of a row, a warp one 8-row block. The caller commits and waits.
template <int Dp, int kRowsTile, class T>
__device__ __forceinline__ void load_core_tile(uint32_t dst, const T* src, int64_t ts, int row0,
                                               int valid, int head_dim) {
  constexpr int kChunks = Dp / 8, kGroups = kWgThreads / 256;
  constexpr int kCols = (kChunks + 4 * kGroups - 1) / (4 * kGroups);
  static_assert(kRowsTile % 64 == 0 && kWgThreads % 256 == 0, "64-row blocks of 4 threads");
  const int t = int(threadIdx.x), r = (t / 4) % 64, c0 = t % 4 + 4 * (t / 256);
  const uint32_t at = dst + uint32_t(((r / 8) * kChunks + c0) * 128 + (r % 8) * 16);
#pragma unroll
  for (int pass = 0; pass < kRowsTile / 64; ++pass) {
    const int row = r + 64 * pass;
    const T* from = src + int64_t(row0 + row) * ts + 8 * c0;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      const int c = c0 + 4 * kGroups * j;
      if (c >= kChunks) continue;
      const bool ok = row < valid && 8 * c < head_dim;
      ptx::cp_async16(at + uint32_t((pass * 8 * kChunks + 4 * kGroups * j) * 128),
                      ok ? from + 32 * kGroups * j : src, ok);
    }
  }
}

// 2^x, subnormal results flushed to zero (a softmax weight that small adds nothing);
// unused where the kernel body is not compiled (not sm_90a).
[[maybe_unused]] __device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <int Dn, class T>
__device__ __forceinline__ void pv_mma(float (&o)[Dn / 2], const uint32_t (&a)[4], uint64_t desc) {
  if constexpr (Dn == 64)
    ptx::wgmma_m64n64k16_rs_tn(o, a, desc, 1, T());
  else if constexpr (Dn == 72)
    ptx::wgmma_m64n72k16_rs_tn(o, a, desc, 1, T());
  else
    ptx::wgmma_m64n80k16_rs_tn(o, a, desc, 1, T());
}

template <int Dp, int Dn, class T>
__global__ void __launch_bounds__(kWgThreads, kWgCtasPerSm)
    segment_attention_wgmma_kernel(Params p) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // wgmma is sm_90a's: never launched elsewhere (wgmma_supports)
#else
  using detail::pack2;
  static_assert(Dp % 16 == 0 && Dn % 8 == 0 && Dn <= Dp, "padded head dims");
  constexpr uint32_t kRowBlock = Dp * 16;  // bytes between 8-row blocks of a tile
  constexpr int kKv = kWgKeys * Dp;        // elements of one K or V stage
  extern __shared__ __align__(128) unsigned char smem[];
  T* q_tile = reinterpret_cast<T*>(smem);
  T* k_tile = q_tile + kWgRows * Dp;
  T* v_tile = k_tile + kWgStages * kKv;

  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int wg = warp / 4, quad_row = lane / 4, quad_col = 2 * (lane % 4);
  const int head = blockIdx.x;
  const Tile tile = p.tiles[blockIdx.y];
  const T* q = static_cast<const T*>(p.q) + int64_t(head) * p.q_h;
  const T* k = static_cast<const T*>(p.k) + int64_t(head) * p.k_h;
  const T* v = static_cast<const T*>(p.v) + int64_t(head) * p.v_h;
  const int n_tiles = (tile.k_end - tile.k_begin + kWgKeys - 1) / kWgKeys;

  auto load_kv = [&](int it) {  // key tile it into stage it % kWgStages
    const int k0 = tile.k_begin + it * kWgKeys, stage = it % kWgStages;
    load_core_tile<Dp, kWgKeys>(ptx::smem_addr(k_tile + stage * kKv), k, p.k_t, k0, tile.k_end - k0,
                                p.head_dim);
    load_core_tile<Dp, kWgKeys>(ptx::smem_addr(v_tile + stage * kKv), v, p.v_t, k0, tile.k_end - k0,
                                p.head_dim);
  };
  // Descriptors of the warpgroup's Q rows and of stage 0's K and V; + n moves one by 16 n
  // bytes (wgmma_desc).
  const uint64_t q_desc =
      ptx::wgmma_desc(ptx::smem_addr(q_tile) + uint32_t(wg) * 8 * kRowBlock, 128, kRowBlock);
  const uint64_t k_desc = ptx::wgmma_desc(ptx::smem_addr(k_tile), 128, kRowBlock);
  const uint64_t v_desc = ptx::wgmma_desc(ptx::smem_addr(v_tile), kRowBlock, 128);
  constexpr uint64_t kStageStep = kKv * 2 / 16;
  // S = Q K^T of key tile it for the warpgroup's 64 rows, issued and committed.
  auto issue_s = [&](float(&s)[32], int it) {
    const uint64_t kd = k_desc + uint64_t(it % kWgStages) * kStageStep;
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Dp / 16; ++kk)
      ptx::wgmma_m64n64k16_ss(s, q_desc + 16 * kk, kd + 16 * kk, kk > 0, T());
    ptx::wgmma_commit();
  };

  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, corr[2];
  // Online softmax in base 2 of key tile it: s[4n + 2i + e] is row quad_row + 8 i, key
  // kt + 8 n + quad_col + e. m is the running maximum of scale_log2 s (the raw maximum
  // scaled: scale_log2 > 0), p = 2^(s scale_log2 - m) in one FFMA and ex2, masked past the
  // segment's end; s becomes P (f32), m and l move on, corr is what O must be scaled by.
  auto softmax = [&](float(&s)[32], int it) {
    const int kt = tile.k_begin + it * kWgKeys;
    if (kt + kWgKeys > tile.k_end) {
#pragma unroll
      for (int n = 0; n < kWgKeys / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (kt + n * 8 + quad_col + e % 2 >= tile.k_end) s[4 * n + e] = -INFINITY;
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float mx = s[2 * i];
#pragma unroll
      for (int n = 0; n < kWgKeys / 8; ++n)
        mx = fmaxf(mx, fmaxf(s[4 * n + 2 * i], s[4 * n + 2 * i + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m[i], mx * p.scale_log2), neg = -m_new;
      corr[i] = exp2_ftz(m[i] - m_new);
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < kWgKeys / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float pr = exp2_ftz(fmaf(s[4 * n + 2 * i + e], p.scale_log2, neg));
          sum += pr;
          s[4 * n + 2 * i + e] = pr;
        }
      l[i] = l[i] * corr[i] + sum;
      m[i] = m_new;
    }
  };
  // P rounded to T as the A fragments of O += P V (two n8 tiles make one k16 fragment).
  uint32_t a[kWgKeys / 16][4];
  auto pack_p = [&](const float(&s)[32]) {
#pragma unroll
    for (int kk = 0; kk < kWgKeys / 16; ++kk)
#pragma unroll
      for (int j = 0; j < 4; ++j) a[kk][j] = pack2(s[8 * kk + 2 * j], s[8 * kk + 2 * j + 1], T());
  };

  // Prologue: Q and key tile 0 (one group), tiles 1 and 2 (one each, maybe empty); P of
  // tile 0.
  load_core_tile<Dp, kWgRows>(ptx::smem_addr(q_tile), q, p.q_t, tile.q0, tile.nq, p.head_dim);
  load_kv(0);
  ptx::cp_async_commit();
  for (int t = 1; t < kWgStages - 1; ++t) {
    if (t < n_tiles) load_kv(t);
    ptx::cp_async_commit();
  }
  ptx::cp_async_wait<kWgStages - 2>();
  ptx::fence_proxy_async_shared();
  __syncthreads();
  float s[32];
  issue_s(s, 0);
  ptx::wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 32; ++i) ptx::fence_operand(s[i]);
  softmax(s, 0);
  pack_p(s);

  float o[Dn / 2];
#pragma unroll
  for (int i = 0; i < Dn / 2; ++i) o[i] = 0.0f;
  // O += P V of key tile it on the tensor cores, issued and committed.
  auto issue_pv = [&](int it) {
    const uint64_t vd = v_desc + uint64_t(it % kWgStages) * kStageStep;
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kWgKeys / 16; ++kk)  // keys 16 kk .. 16 kk + 15: two 8-row blocks
      pv_mma<Dn, T>(o, a[kk], vd + 2 * kRowBlock / 16 * kk);
    ptx::wgmma_commit();
  };
  // Waits for every wgmma; o and a may be touched again.
  auto wait_all = [&] {
    ptx::wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < Dn / 2; ++i) ptx::fence_operand(o[i]);
#pragma unroll
    for (int kk = 0; kk < kWgKeys / 16; ++kk)
#pragma unroll
      for (int j = 0; j < 4; ++j) ptx::fence_operand(a[kk][j]);
  };
  // Iteration it: S of tile it + 1 and O += P V of tile it run on the tensor cores while
  // the softmax of tile it + 1 runs here; O is rescaled once P V is done. The loop body
  // has no branch around a wgmma or its wait (ptxas would serialize the wgmmas), so the
  // last tile's P V follows it.
  for (int it = 0; it + 1 < n_tiles; ++it) {
    ptx::cp_async_wait<kWgStages - 3>();
    ptx::fence_proxy_async_shared();
    __syncthreads();  // tile it + 1 visible to every warpgroup; tile it - 1's stage free
    // (tile it + 2 may still be in flight)
    if (it + kWgStages - 1 < n_tiles) load_kv(it + kWgStages - 1);
    ptx::cp_async_commit();
    issue_s(s, it + 1);
    issue_pv(it);
    ptx::wgmma_wait<1>();  // S done; P V may still run
#pragma unroll
    for (int i = 0; i < 32; ++i) ptx::fence_operand(s[i]);
    softmax(s, it + 1);
    wait_all();
#pragma unroll
    for (int n = 0; n < Dn / 8; ++n)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        o[4 * n + 2 * i] *= corr[i];
        o[4 * n + 2 * i + 1] *= corr[i];
      }
    pack_p(s);
  }
  issue_pv(n_tiles - 1);  // its tile became visible at the last barrier
  wait_all();

#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float li = l[i];
    li += __shfl_xor_sync(0xffffffffu, li, 1);
    li += __shfl_xor_sync(0xffffffffu, li, 2);
    const int r = 64 * wg + 16 * (warp % 4) + quad_row + 8 * i;
    if (r >= tile.nq) continue;
    const float inv = 1.0f / li;
    const int64_t at = int64_t(tile.q0 + r) * p.o_t + int64_t(head) * p.o_h;
#pragma unroll
    for (int n = 0; n < Dn / 8; ++n) {
      const int col = n * 8 + quad_col;
      if (col >= p.head_dim) continue;
      detail::store_out_pair<T>(p, at, col, o[4 * n + 2 * i] * inv, o[4 * n + 2 * i + 1] * inv);
    }
  }
#endif
}

template <int Dp, int Dn, class T>
void launch_wgmma_at(const Params& p, int num_tiles, int heads, cudaStream_t stream) {
  constexpr int smem = wg_smem_bytes<Dp>();
  VT_CUDA_CHECK(cudaFuncSetAttribute(segment_attention_wgmma_kernel<Dp, Dn, T>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  // All of L1 as shared memory, so two CTAs fit on an SM (__launch_bounds__).
  VT_CUDA_CHECK(cudaFuncSetAttribute(segment_attention_wgmma_kernel<Dp, Dn, T>,
                                     cudaFuncAttributePreferredSharedMemoryCarveout,
                                     int(cudaSharedmemCarveoutMaxShared)));
  const dim3 grid{unsigned(heads), unsigned(num_tiles)};
  segment_attention_wgmma_kernel<Dp, Dn, T><<<grid, kWgThreads, smem, stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("segment_attention_wgmma_kernel");
}

template <class T>
void launch_wgmma_typed(const Params& p, int num_tiles, int heads, cudaStream_t stream) {
  switch (p.head_dim) {
    case 64:
      return launch_wgmma_at<64, 64, T>(p, num_tiles, heads, stream);
    case 72:
      return launch_wgmma_at<80, 72, T>(p, num_tiles, heads, stream);
    default:
      return launch_wgmma_at<80, 80, T>(p, num_tiles, heads, stream);
  }
}

}  // namespace

bool wgmma_supports(int head_dim, int cc) {
  return cc == 90 && (head_dim == 64 || head_dim == 72 || head_dim == 80);
}

void launch_wgmma(const Params& p, bool bf16, int num_tiles, int heads, cudaStream_t stream) {
  VT_CHECK((p.head_dim == 64 || p.head_dim == 72 || p.head_dim == 80) && p.vec_in,
           "segment_attention wgmma: head_dim ", p.head_dim, " or its rows are not supported");
  if (bf16)
    launch_wgmma_typed<__nv_bfloat16>(p, num_tiles, heads, stream);
  else
    launch_wgmma_typed<__half>(p, num_tiles, heads, stream);
}

}  // namespace vt::cuda::segattn
