// Skinny GEMM for decode (contract: vt/cuda/gemm.h): out[M, N] = x[M, K] . w[N, K]^T
// with M <= 32, x and w bf16 (or both f16). Weight streaming: every weight byte is read
// once, so the kernel is about keeping HBM busy.
//
// Work split. A CTA (kWarps warps) owns kRows = 32 weight rows (two 16-row mma tiles)
// and one K slice; the `split` CTAs of a cluster cover the row tile's K. Inside the slice
// each warp takes a contiguous range of 32-wide K steps. Per step a lane needs, for each
// 16-row tile, 8 k-values of its rows g and g + 8 (g = lane / 4) and, for each 8-row
// activation tile, 8 k-values of x row g: all at k = step * 32 + (lane % 4) * 8, one
// 16-byte vector each.
//
// Why that works as mma fragments. m16n8k16's A fragment gives lane (g, t = lane % 4)
// rows g and g + 8 at logical columns {2t, 2t+1} (registers 0, 1) and {2t+8, 2t+9}
// (registers 2, 3); B gives it column g at the same logical rows. Both depend on t alone,
// so any bijection physical k <-> logical k that is a function of t applies to A and B
// alike and leaves the dot products unchanged. We take: in the step's mma j (0, 1),
// logical {2t, 2t+1} = physical t*8 + 4j + {0, 1} (the vector's 32-bit word 2j) and
// logical {2t+8, 2t+9} = physical t*8 + 4j + {2, 3} (word 2j + 1). So a lane's own
// 16-byte vectors are its fragments: no ldmatrix, no lane exchange.
//
// Pipeline. Each lane copies its vectors with cp.async (zero-filled past N, past M and
// past K) into its private slot of a kStages-deep ring in shared memory and reads back
// only what it copied itself, so the ring needs no barrier: cp.async.wait_group alone
// orders it. Shared layout ring[warp][stage][vector][lane] (16 bytes each): a warp's
// read of one vector is 512 contiguous bytes, conflict-free. In flight per warp: the
// ring's depth, kStages x 2 KB of weights; two CTAs per SM.
//
// Programmatic dependent launch (vt/cuda/gemm.h, SkinnyPdl). Weights never depend on
// the previous kernel, x does. With PDL the prologue issues the ring's weight copies
// (one cp.async group per stage, as without PDL), optionally prefetches the next ring
// depth of weights into L2, then waits at griddepcontrol.wait; only then does each lane
// load its x vectors for the prologue stages (plain 16-byte L2 loads stored to its own
// ring slots: no cp.async group, so the group count and wait_group depth of the main
// loop are unchanged) and trigger launch_dependents (the CTA holds every resource it
// will hold). A dependent grid launches only once every CTA of this grid has triggered
// or exited, so CTAs of the next kernel parked at their own wait can only take slots of
// CTAs that already exited: no CTA of this grid is left waiting for a slot (no
// deadlock), and out, written at the very end, is after the wait.
//
// Reduction, fixed order: the warps' accumulators go to shared memory, each output is
// summed over warps 0..7; with split > 1 the CTA's partial stays in its shared memory
// and cluster rank 0 sums ranks 0..split-1 through distributed shared memory, adds the
// bias in f32 and rounds once.
#include <cooperative_groups.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "vt/cuda/api.h"
#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gemm.h"
#include "vt/cuda/ptx.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

namespace cg = cooperative_groups;

constexpr int kWarps = 8, kThreads = kWarps * kWarp;
constexpr int kRowTiles = 2, kRows = 16 * kRowTiles;  // weight rows per CTA
constexpr int kStepK = 32;                            // K per pipeline step (two mma k16)
constexpr int kMaxSplit = 8;                          // portable cluster size
constexpr int kMinStepsPerWarp = 2;

// Per activation tile count (M <= 8 * kMTiles): 16-byte vectors per lane per step, ring
// depth (about 100 KB of shared memory per CTA, so two CTAs fit an SM).
template <int kMTiles>
struct Shape {
  static constexpr int kMRows = 8 * kMTiles;
  static constexpr int kVecs = 2 * kRowTiles + kMTiles;  // w rows g, g+8 per tile; x rows
  static constexpr int kStages = kMTiles == 1 ? 5 : kMTiles == 2 ? 4 : 3;
  static constexpr int kRingBytes = kWarps * kStages * kVecs * kWarp * 16;
  static constexpr int kRedBytes = kWarps * kMRows * kRows * 4;  // per-warp sums
  static constexpr int kPartBytes = kMRows * kRows * 4;          // the CTA's sum
  static constexpr int kPartOffset = kRingBytes > kRedBytes ? kRingBytes : kRedBytes;
  static constexpr int kSmemBytes = kPartOffset + kPartBytes;
};

struct Params {
  const void* x;
  const void* w;
  const void* bias;  // null: none
  void* out;
  int64_t m, n, k, ldx, ldw, ldo;
  DType bias_dtype, out_dtype;
  int split;  // CTAs per row tile (the cluster size)
  int pdl;    // 0: plain launch; 1: PDL, ring issued before the wait; 2: also L2 prefetch
};

// The PTX the kernel is written with (vt/cuda/ptx.cuh): the weight and x copies carry
// the .L2::256B hint, the mma is `asm volatile`.
using ptx::cp_async16_l2_256b;
using ptx::cp_async_commit;
using ptx::cp_async_wait;
using ptx::grid_dependency_wait;
using ptx::grid_launch_dependents;
using ptx::mma_m16n8k16_volatile;
using ptx::prefetch_l2;
using ptx::smem_addr;

// Adds bias (f32), rounds once, stores; o indexes the CTA's [kMRows][kRows] outputs.
__device__ __forceinline__ void store_out(const Params& p, int64_t n0, int o, float v) {
  const int64_t m = o / kRows, n = n0 + o % kRows;
  if (m >= p.m || n >= p.n) return;
  if (p.bias) v += load_f32(p.bias, p.bias_dtype, n);
  store_f32(p.out, p.out_dtype, m * p.ldo + n, v);
}

template <class T, int kMTiles>
__global__ void __launch_bounds__(kThreads, 2) skinny_gemm_kernel(const Params p) {
  using S = Shape<kMTiles>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int g = lane / 4, t = lane % 4;
  const int rank = int(blockIdx.x % unsigned(p.split));
  const int64_t n0 = int64_t(blockIdx.x / unsigned(p.split)) * kRows;

  // This warp's K steps: an even share of the tile's steps over split x kWarps warps.
  const int64_t steps = (p.k + kStepK - 1) / kStepK, q = int64_t(rank) * kWarps + warp;
  const int64_t nq = int64_t(p.split) * kWarps;
  const int64_t step0 = q * steps / nq;
  const int n_steps = int((q + 1) * steps / nq - step0);

  // Vector r < 2 kRowTiles: weight row n0 + 8 r + g (tile r / 2, its row g or g + 8);
  // vector 2 kRowTiles + i: activation row 8 i + g. Offsets of k = 0, lane's t included.
  const T* w = static_cast<const T*>(p.w);
  const T* x = static_cast<const T*>(p.x);
  int64_t w_off[2 * kRowTiles], x_off[kMTiles];
  bool w_ok[2 * kRowTiles], x_ok[kMTiles];
#pragma unroll
  for (int r = 0; r < 2 * kRowTiles; ++r) {
    const int64_t n = n0 + 8 * r + g;
    w_ok[r] = n < p.n;
    w_off[r] = (w_ok[r] ? n * p.ldw : 0) + t * 8;
  }
#pragma unroll
  for (int i = 0; i < kMTiles; ++i) {
    const int64_t m = 8 * i + g;
    x_ok[i] = m < p.m;
    x_off[i] = (x_ok[i] ? m * p.ldx : 0) + t * 8;
  }

  uint4* ring = reinterpret_cast<uint4*>(smem) + warp * (S::kStages * S::kVecs * kWarp) + lane;
  auto issue_w = [&](int64_t step, int stage) {
    const int64_t k = step * kStepK;
    const bool k_ok = k + t * 8 < p.k;  // K % 8 == 0: a vector is all in or all out
    uint4* slot = ring + stage * (S::kVecs * kWarp);
#pragma unroll
    for (int r = 0; r < 2 * kRowTiles; ++r) {
      const bool ok = k_ok && w_ok[r];
      cp_async16_l2_256b(smem_addr(slot + r * kWarp), ok ? w + w_off[r] + k : w, ok);
    }
  };
  auto issue_x = [&](int64_t step, int stage) {
    const int64_t k = step * kStepK;
    const bool k_ok = k + t * 8 < p.k;
    uint4* slot = ring + stage * (S::kVecs * kWarp);
#pragma unroll
    for (int i = 0; i < kMTiles; ++i)  // rows past M are never read back: no copy
      if (x_ok[i])
        cp_async16_l2_256b(smem_addr(slot + (2 * kRowTiles + i) * kWarp),
                           k_ok ? x + x_off[i] + k : x, k_ok);
  };
  auto issue = [&](int64_t step, int stage) {
    issue_w(step, stage);
    issue_x(step, stage);
  };

  float acc[kRowTiles][kMTiles][4] = {};
  if (p.pdl == 0) {
#pragma unroll
    for (int s = 0; s < S::kStages; ++s) {
      if (s < n_steps) issue(step0 + s, s);
      cp_async_commit();
    }
  } else {
    // Before the wait: weights only (module comment, "Programmatic dependent launch").
#pragma unroll
    for (int s = 0; s < S::kStages; ++s) {
      if (s < n_steps) issue_w(step0 + s, s);
      cp_async_commit();
    }
    if (p.pdl == 2 && t == 0) {  // one lane per row: a step's 64 bytes of the row
      for (int s = S::kStages; s < 2 * S::kStages && s < n_steps; ++s) {
        const int64_t k = (step0 + s) * kStepK;
#pragma unroll
        for (int r = 0; r < 2 * kRowTiles; ++r)
          if (w_ok[r]) prefetch_l2(w + w_off[r] + k);
      }
    }
    grid_dependency_wait();
    // The prologue's x, straight to the lane's own slots (read back by this lane only,
    // in program order: no barrier, no cp.async group).
#pragma unroll
    for (int s = 0; s < S::kStages; ++s) {
      const int64_t k = (step0 + s) * kStepK;
      const bool k_ok = k + t * 8 < p.k;
      uint4* slot = ring + s * (S::kVecs * kWarp);
#pragma unroll
      for (int i = 0; i < kMTiles; ++i)
        if (s < n_steps && x_ok[i])
          slot[(2 * kRowTiles + i) * kWarp] =
              k_ok ? __ldcg(reinterpret_cast<const uint4*>(x + x_off[i] + k)) : uint4{};
    }
    grid_launch_dependents();
  }
  int stage = 0;
  for (int i = 0; i < n_steps; ++i) {
    // Committed groups: kStages + i; at most kStages - 1 pending leaves step i landed.
    cp_async_wait<S::kStages - 1>();
    const uint4* slot = ring + stage * (S::kVecs * kWarp);
    uint4 a[2 * kRowTiles], b[kMTiles];
#pragma unroll
    for (int r = 0; r < 2 * kRowTiles; ++r) a[r] = slot[r * kWarp];
#pragma unroll
    for (int j = 0; j < kMTiles; ++j) b[j] = x_ok[j] ? slot[(2 * kRowTiles + j) * kWarp] : uint4{};
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) {
      const uint4 lo = a[2 * rt], hi = a[2 * rt + 1];  // rows g and g + 8
#pragma unroll
      for (int j = 0; j < kMTiles; ++j) {
        // physical +0..3, then +4..7
        mma_m16n8k16_volatile<T>(acc[rt][j], lo.x, hi.x, lo.y, hi.y, b[j].x, b[j].y);
        mma_m16n8k16_volatile<T>(acc[rt][j], lo.z, hi.z, lo.w, hi.w, b[j].z, b[j].w);
      }
    }
    // Refill the slot just read (its values are in registers, consumed by the mmas).
    if (i + S::kStages < n_steps) issue(step0 + i + S::kStages, stage);
    cp_async_commit();
    stage = stage + 1 == S::kStages ? 0 : stage + 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with its ring: the sums overlay it

  // C fragment: lane (g, t) holds rows g, g + 8 (weight rows) x columns 2t, 2t + 1
  // (activation rows) of each 16 x 8 tile.
  float* red = reinterpret_cast<float*>(smem);  // [kWarps][kMRows][kRows]
#pragma unroll
  for (int rt = 0; rt < kRowTiles; ++rt)
#pragma unroll
    for (int j = 0; j < kMTiles; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int m = 8 * j + 2 * t + (c & 1), n = 16 * rt + g + 8 * (c >> 1);
        red[(warp * S::kMRows + m) * kRows + n] = acc[rt][j][c];
      }
  __syncthreads();
  float* part = reinterpret_cast<float*>(smem + S::kPartOffset);  // [kMRows][kRows]
  constexpr int kOut = S::kMRows * kRows;
  for (int o = threadIdx.x; o < kOut; o += kThreads) {
    float v = red[o];
#pragma unroll
    for (int wi = 1; wi < kWarps; ++wi) v += red[wi * kOut + o];
    if (p.split == 1) {
      store_out(p, n0, o, v);
    } else {
      part[o] = v;
    }
  }
  if (p.split == 1) return;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every rank's part written and visible cluster-wide
  if (rank == 0) {
    for (int o = threadIdx.x; o < kOut; o += kThreads) {
      float v = part[o];
      for (int r = 1; r < p.split; ++r) v += cluster.map_shared_rank(part, r)[o];
      store_out(p, n0, o, v);
    }
  }
  cluster.sync();  // peers keep their shared memory until rank 0 has read it
}

// CTAs per row tile. Bandwidth is shared by the resident CTAs (two per SM), so a
// launch whose last wave is mostly empty streams at a fraction of HBM for that wave:
// take the smallest split (1, 2, 4, 8) whose waves are >= 90% full (CTAs over wave
// slots), else the fullest; never below kMinStepsPerWarp steps per warp. A function of
// the shape and the SM count only, like the summation order it fixes.
int cluster_split(int64_t tiles, int64_t steps, int num_sms) {
  const int64_t slots = 2 * int64_t(std::max(num_sms, 1));
  int best = 1;
  double best_fill = 0;
  for (int split = 1; split <= kMaxSplit; split *= 2) {
    if (split > 1 && steps < int64_t(split) * kWarps * kMinStepsPerWarp) break;
    const int64_t ctas = tiles * split, waves = (ctas + slots - 1) / slots;
    const double fill = double(ctas) / double(waves * slots);
    if (fill >= 0.9) return split;
    if (fill > best_fill) best = split, best_fill = fill;
  }
  return best;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class T, int kMTiles>
void launch(StreamState& st, const Params& p, int64_t tiles) {
  using S = Shape<kMTiles>;
  // Function attributes are per device: set once on each (a racing second setter is
  // harmless). All shared memory, no L1 preference: x and w bypass L1 (cp.async.cg).
  static std::atomic<uint64_t> devices_set{0};
  const uint64_t bit = uint64_t(1) << (st.device % 64);
  if (!(devices_set.load(std::memory_order_acquire) & bit)) {
    VT_CUDA_CHECK(cudaFuncSetAttribute(skinny_gemm_kernel<T, kMTiles>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes));
    VT_CUDA_CHECK(cudaFuncSetAttribute(skinny_gemm_kernel<T, kMTiles>,
                                       cudaFuncAttributePreferredSharedMemoryCarveout,
                                       int(cudaSharedmemCarveoutMaxShared)));
    devices_set.fetch_or(bit, std::memory_order_release);
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(tiles * p.split));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = S::kSmemBytes;
  cfg.stream = st.stream;
  cudaLaunchAttribute attr[2];
  unsigned n_attr = 0;
  if (p.split > 1) {  // no cluster: the kernel skips the cluster steps
    attr[n_attr].id = cudaLaunchAttributeClusterDimension;
    attr[n_attr].val.clusterDim.x = unsigned(p.split);
    attr[n_attr].val.clusterDim.y = 1;
    attr[n_attr].val.clusterDim.z = 1;
    ++n_attr;
  }
  if (p.pdl != 0) {
    attr[n_attr].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n_attr].val.programmaticStreamSerializationAllowed = 1;
    ++n_attr;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n_attr;
  VT_CUDA_CHECK(cudaLaunchKernelEx(&cfg, skinny_gemm_kernel<T, kMTiles>, p));
  VT_CUDA_CHECK_LAUNCH("skinny_gemm_kernel");
}

template <class T>
void launch_for_m(StreamState& st, const Params& p, int64_t tiles) {
  if (p.m <= 8) return launch<T, 1>(st, p, tiles);
  if (p.m <= 16) return launch<T, 2>(st, p, tiles);
  launch<T, 4>(st, p, tiles);
}

}  // namespace

bool skinny_supports(const Tensor& x, const Tensor& w, const Tensor& out) {
  (void)out;  // any out dtype: stored through store_f32
  const int64_t m = x.size(0), k = x.size(1);
  const bool narrow = x.dtype() == DType::kBF16 || x.dtype() == DType::kF16;
  return narrow && w.dtype() == x.dtype() && m >= 1 && m <= kSkinnyLimitM && k > 0 && k % 8 == 0 &&
         aligned16(x.data_ptr()) && aligned16(w.data_ptr()) && (m == 1 || x.stride(0) % 8 == 0) &&
         (w.size(0) == 1 || w.stride(0) % 8 == 0);
}

void linear_skinny(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias,
                   const Tensor& out, int split, SkinnyPdl pdl) {
  VT_CHECK(skinny_supports(x, w, out), "linear (CUDA skinny): x ", x.str(), " w ", w.str(),
           " is not a bf16/f16 pair with M <= ", kSkinnyLimitM,
           ", K a multiple of 8 and 16-byte aligned rows");
  const int64_t m = x.size(0), n = w.size(0), k = x.size(1);
  if (n == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  Params p{};
  p.x = x.data_ptr();
  p.w = w.data_ptr();
  p.bias = bias.defined() ? bias.data_ptr() : nullptr;
  p.out = out.data_ptr();
  p.m = m;
  p.n = n;
  p.k = k;
  p.ldx = m == 1 ? 0 : x.stride(0);
  p.ldw = n == 1 ? 0 : w.stride(0);
  p.ldo = m == 1 ? 0 : out.stride(0);
  p.bias_dtype = bias.defined() ? bias.dtype() : DType::kF32;
  p.out_dtype = out.dtype();
  const int64_t tiles = (n + kRows - 1) / kRows, steps = (k + kStepK - 1) / kStepK;
  VT_CHECK(split == 0 || split == 1 || split == 2 || split == 4 || split == kMaxSplit,
           "linear (CUDA skinny): split ", split, " is not 0, 1, 2, 4 or 8");
  p.split = split ? split : cluster_split(tiles, steps, st.num_sms);
  if (pdl == SkinnyPdl::kDefault)  // graphs only: vt/cuda/gemm.h says why
    pdl = st.kernels->pdl != Toggle::kOff && capturing(st) ? SkinnyPdl::kRingL2 : SkinnyPdl::kOff;
  p.pdl = pdl == SkinnyPdl::kOff ? 0 : pdl == SkinnyPdl::kRing ? 1 : 2;
  if (x.dtype() == DType::kBF16) {
    launch_for_m<__nv_bfloat16>(st, p, tiles);
  } else {
    launch_for_m<__half>(st, p, tiles);
  }
}

}  // namespace vt::cuda
