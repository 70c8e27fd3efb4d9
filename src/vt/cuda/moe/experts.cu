// CUDA moe_experts (vt/ops/moe.h): permutation, two grouped GEMMs, the k-sum.
//
// bf16 x, out, gate_up and down with H, I multiples of 8 and 16-byte aligned rows (the
// model's case) take the tensor-core path:
//   1. permute_kernel (one block): the token -> expert permutation and the tile table of
//      the regime's tile rows (experts.cuh), from topk_ids on the device;
//   2. gate_up_swiglu: hid = SwiGLU of x . gate_up[e]^T per permuted row (grouped_gemm.cuh);
//   3. down_weighted: y[i] = R(R(hid . down[e]^T) * w_i) per entry i = t k + j;
//   4. reduce_kernel: out[t] = R(sum_j y[t k + j]) in f32, j in order.
// Every other dtype mix (f32, f16 activations, f32 weights) and odd H, I take the
// CUDA-core path: a thread per (entry, hid column) and per (entry, output column), the
// same rounding points, sums sequential in f32; then the same k-sum.
// Workspace (hid, y, the permutation) comes from the caching allocator, sized from T, k
// and E; nothing is read back to the host, so a graph can capture the whole op.
#include <algorithm>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/moe.h"
#include "vt/cuda/moe/experts.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kPermuteThreads = 1024;

// Inclusive sum over a warp of 64-bit values.
__device__ __forceinline__ unsigned long long warp_inclusive_sum(unsigned long long v) {
  const int lane = threadIdx.x % kWarp;
  for (int off = 1; off < kWarp; off <<= 1) {
    const unsigned long long o = __shfl_up_sync(0xffffffffu, v, off);
    if (lane >= off) v += o;
  }
  return v;
}

// One block. Counts per expert (shared integer atomics), then per expert, in chunks of
// kPermuteThreads with a carry, the exclusive prefix sum of (rows << 32 | tiles) packed
// in 64 bits (one scan for both), the expert's tiles written by its thread, and finally
// each entry placed at its expert's cursor.
__global__ void __launch_bounds__(kPermuteThreads)
    permute_kernel(const int32_t* ids, int64_t tk, int E, int bm, int32_t* entries,
                   moe::Tile* tiles, int32_t* num_tiles) {
  extern __shared__ int counts[];  // [E] counts, then [E] cursors
  int* cursor = counts + E;
  __shared__ unsigned long long warp_part[kPermuteThreads / kWarp];
  __shared__ unsigned long long carry;
  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
  for (int e = tid; e < E; e += kPermuteThreads) counts[e] = 0;
  if (tid == 0) carry = 0;
  __syncthreads();
  for (int64_t i = tid; i < tk; i += kPermuteThreads) atomicAdd(&counts[ids[i]], 1);
  __syncthreads();
  for (int base = 0; base < E; base += kPermuteThreads) {
    const int e = base + tid;
    const int c = e < E ? counts[e] : 0;
    const int n_tiles = (c + bm - 1) / bm;
    const unsigned long long v = (static_cast<unsigned long long>(c) << 32) | unsigned(n_tiles);
    const unsigned long long incl = warp_inclusive_sum(v);
    if (lane == kWarp - 1) warp_part[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      const unsigned long long w = warp_part[lane];
      warp_part[lane] = warp_inclusive_sum(w) - w;
    }
    __syncthreads();
    const unsigned long long excl = carry + warp_part[warp] + incl - v;
    if (e < E) {
      const int row0 = int(excl >> 32), tile0 = int(excl & 0xffffffffu);
      cursor[e] = row0;
      for (int q = 0; q < n_tiles; ++q)
        tiles[tile0 + q] = moe::Tile{e, row0 + q * bm, min(bm, c - q * bm), 0};
    }
    __syncthreads();  // every thread read carry
    if (tid == kPermuteThreads - 1) carry = excl + v;
    __syncthreads();
  }
  if (tid == 0) *num_tiles = int(carry & 0xffffffffu);
  for (int64_t i = tid; i < tk; i += kPermuteThreads)
    entries[atomicAdd(&cursor[ids[i]], 1)] = int32_t(i);
}

// CUDA-core path, gate_up: a thread per (entry i, hid column c).
__global__ void gate_up_rows_kernel(const void* x, DType x_dt, const void* gu, DType w_dt,
                                    const int32_t* ids, int64_t tk, int64_t k, int64_t H, int64_t I,
                                    void* hid, DType out_dt) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= tk * I) return;
  const int64_t i = idx / I, c = idx % I, t = i / k, e = ids[i];
  const int64_t xr = t * H, gr = (e * 2 * I + c) * H, ur = (e * 2 * I + I + c) * H;
  float g = 0.0f, u = 0.0f;
  for (int64_t h = 0; h < H; ++h) {
    const float xv = load_f32(x, x_dt, xr + h);
    g = __fadd_rn(g, __fmul_rn(xv, load_f32(gu, w_dt, gr + h)));
    u = __fadd_rn(u, __fmul_rn(xv, load_f32(gu, w_dt, ur + h)));
  }
  const float s = round_to(siluf(round_to(g, out_dt)), out_dt);
  store_f32(hid, out_dt, idx, __fmul_rn(s, round_to(u, out_dt)));
}

// CUDA-core path, down: a thread per (entry i, output column n); y[i, n] = R(R(d) * w_i).
__global__ void down_rows_kernel(const void* hid, const void* down, DType w_dt, const int32_t* ids,
                                 const void* rw, DType rw_dt, int64_t tk, int64_t H, int64_t I,
                                 void* y, DType out_dt) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= tk * H) return;
  const int64_t i = idx / H, n = idx % H, e = ids[i];
  const int64_t hr = i * I, dr = (e * H + n) * I;
  float d = 0.0f;
  for (int64_t c = 0; c < I; ++c)
    d = __fadd_rn(d, __fmul_rn(load_f32(hid, out_dt, hr + c), load_f32(down, w_dt, dr + c)));
  store_f32(y, out_dt, idx, __fmul_rn(round_to(d, out_dt), load_f32(rw, rw_dt, i)));
}

// out[t, h] = R(sum_j y[t k + j, h]), f32 in j order: a thread per element.
__global__ void reduce_kernel(const void* y, void* out, DType dt, int64_t T, int64_t k, int64_t H) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= T * H) return;
  const int64_t t = idx / H, h = idx % H;
  float s = 0.0f;
  for (int64_t j = 0; j < k; ++j) s = __fadd_rn(s, load_f32(y, dt, (t * k + j) * H + h));
  store_f32(out, dt, idx, s);
}

// The same for bf16 rows with H % 8 == 0: a thread per 8 columns, 16-byte loads.
__global__ void reduce_bf16x8_kernel(const uint4* y, uint4* out, int64_t T, int64_t k, int64_t H8) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= T * H8) return;
  const int64_t t = idx / H8, c = idx % H8;
  float s[8] = {};
  for (int64_t j = 0; j < k; ++j) {
    const uint4 v = y[(t * k + j) * H8 + c];
    const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float2 f = __bfloat1622float2(p[q]);
      s[2 * q] = __fadd_rn(s[2 * q], f.x);
      s[2 * q + 1] = __fadd_rn(s[2 * q + 1], f.y);
    }
  }
  uint4 o;
  __nv_bfloat162* po = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
  for (int q = 0; q < 4; ++q) po[q] = __floats2bfloat162_rn(s[2 * q], s[2 * q + 1]);
  out[idx] = o;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

unsigned blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  VT_CHECK(b <= int64_t(0x7fffffff), "moe_experts (CUDA): ", n, " threads exceed the grid");
  return unsigned(b);
}

}  // namespace

void moe_experts(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                 const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& out) {
  const int64_t T = x.size(0), H = x.size(1), E = gate_up.size(0), I = gate_up.size(1) / 2;
  const int64_t k = topk_ids.size(1), tk = T * k;
  if (T == 0) return;
  VT_CHECK(tk <= int64_t(0x7fffffff), "moe_experts (CUDA): ", tk, " routed rows");
  StreamState& st = s.cuda_state();
  set_device(st);
  const Device dev = x.device();
  const DType dt = out.dtype();
  const int32_t* ids = static_cast<const int32_t*>(topk_ids.data_ptr());
  Tensor y = Tensor::empty({tk, H}, dt, dev);
  const bool tensor_cores = dt == DType::kBF16 && x.dtype() == DType::kBF16 &&
                            gate_up.dtype() == DType::kBF16 && down.dtype() == DType::kBF16 &&
                            H % 8 == 0 && I % 8 == 0 && aligned16(x.data_ptr()) &&
                            aligned16(gate_up.data_ptr()) && aligned16(down.data_ptr());
  if (tensor_cores) {
    const moe::Regime regime = moe::pick_regime(tk, E);
    const int64_t bm = moe::tile_rows(regime);
    const int64_t max_tiles = std::min(E, tk) + tk / bm;
    VT_CHECK(2 * E * int64_t(sizeof(int)) <= (48 << 10), "moe_experts (CUDA): ", E,
             " experts exceed the permutation's shared memory");
    // One i32 buffer: the tiles (16-byte records first, so aligned), the entries, the count.
    Tensor perm = Tensor::empty({4 * max_tiles + tk + 1}, DType::kI32, dev);
    int32_t* base = static_cast<int32_t*>(perm.data_ptr());
    moe::Tile* tiles = reinterpret_cast<moe::Tile*>(base);
    int32_t* entries = base + 4 * max_tiles;
    int32_t* num_tiles = entries + tk;
    permute_kernel<<<1, kPermuteThreads, size_t(2 * E) * sizeof(int), st.stream>>>(
        ids, tk, int(E), int(bm), entries, tiles, num_tiles);
    VT_CUDA_CHECK_LAUNCH("permute_kernel");
    const moe::Permutation p{entries, tiles, num_tiles, max_tiles};
    Tensor hid = Tensor::empty({tk, I}, DType::kBF16, dev);
    auto* hid_p = static_cast<__nv_bfloat16*>(hid.data_ptr());
    moe::gate_up_swiglu(st, regime, p, static_cast<const __nv_bfloat16*>(x.data_ptr()),
                        static_cast<const __nv_bfloat16*>(gate_up.data_ptr()), hid_p, k, H, I);
    moe::down_weighted(st, regime, p, hid_p, static_cast<const __nv_bfloat16*>(down.data_ptr()),
                       topk_weights.data_ptr(), topk_weights.dtype(),
                       static_cast<__nv_bfloat16*>(y.data_ptr()), H, I);
  } else {
    Tensor hid = Tensor::empty({tk, I}, dt, dev);
    gate_up_rows_kernel<<<blocks_for(tk * I, 256), 256, 0, st.stream>>>(
        x.data_ptr(), x.dtype(), gate_up.data_ptr(), gate_up.dtype(), ids, tk, k, H, I,
        hid.data_ptr(), dt);
    VT_CUDA_CHECK_LAUNCH("gate_up_rows_kernel");
    down_rows_kernel<<<blocks_for(tk * H, 256), 256, 0, st.stream>>>(
        hid.data_ptr(), down.data_ptr(), down.dtype(), ids, topk_weights.data_ptr(),
        topk_weights.dtype(), tk, H, I, y.data_ptr(), dt);
    VT_CUDA_CHECK_LAUNCH("down_rows_kernel");
  }
  if (dt == DType::kBF16 && H % 8 == 0 && aligned16(out.data_ptr())) {
    reduce_bf16x8_kernel<<<blocks_for(T * H / 8, 256), 256, 0, st.stream>>>(
        static_cast<const uint4*>(y.data_ptr()), static_cast<uint4*>(out.data_ptr()), T, k, H / 8);
    VT_CUDA_CHECK_LAUNCH("reduce_bf16x8_kernel");
  } else {
    reduce_kernel<<<blocks_for(T * H, 256), 256, 0, st.stream>>>(y.data_ptr(), out.data_ptr(), dt,
                                                                 T, k, H);
    VT_CUDA_CHECK_LAUNCH("reduce_kernel");
  }
}

}  // namespace vt::cuda
