// CUDA causal_conv1d_silu and gdn_gates (vt/cuda/gdn.h). Arithmetic in the CPU
// reference's order (taps summed from the oldest, one fused multiply-add per tap), f32;
// with a narrow out the conv output rounds before SiLU and SiLU's result rounds
// (vt/ops/gdn.h). The two conv forms (a thread per (request, channel) walking its
// tokens; a thread per (4 channels, run of tokens) streaming x, plus the state roll)
// evaluate the same expression (conv_silu) on the same window values, so they give the
// same bits.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn.h"
#include "vt/cuda/gdn/gates.cuh"
#include "vt/cuda/gdn/varlen.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxKernel = 8;

// The streaming conv (T > B): a thread owns kLanes adjacent channels (one 8-byte load of
// a 16-bit row, 16 bytes of an f32 one) over a run of consecutive tokens, and loads
// kStage rows of x before computing any of their outputs (the loads in flight that a
// memory-bound kernel needs). Four lanes, not eight: the weights, the window and the
// stage live per lane in registers (~128 a thread at K = 4 by ptxas -v: 4 blocks, 16
// warps a SM, each thread with 8 rows in flight).
constexpr int kStreamThreads = 128;
constexpr int kLanes = 4;
constexpr int kStage = 8;
constexpr int kMaxRun = 64;  // tokens per run; runs are kStage .. kMaxRun, powers of 2

// The request that owns token t: the last b with start[b] <= t (an empty request shares
// its start with the next one, which then owns the token).
__device__ __forceinline__ int request_of(const int32_t* start, int batch, int64_t t) {
  int lo = 0, hi = batch - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (start[mid] <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// One output of the conv: silu(sum_j w[j] win[j]) over the K window values, oldest
// first, every form's expression. The fused multiply-add is what nvcc contracted the
// earlier `acc += w * x` to; written out so no form depends on the contraction.
__device__ __forceinline__ float conv_silu(const float* w, const float* win, int K, DType odt) {
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxKernel; ++j)
    if (j < K) acc = __fmaf_rn(w[j], win[j], acc);
  return siluf(round_to(acc, odt));  // narrow out: the conv output rounds before SiLU
}

// A thread's kLanes channels [i, i + n) of p as f32 (lanes past n: 0). vec: all kLanes
// are there and their kLanes elements aligned (the host's check and a full group).
__device__ __forceinline__ void unpack16(uint2 raw, DType dt, float (&v)[kLanes]) {
  const uint32_t word[2] = {raw.x, raw.y};
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    if (dt == DType::kBF16) {  // a bf16 is the high half of its f32
      v[2 * k] = __uint_as_float(word[k] << 16);
      v[2 * k + 1] = __uint_as_float(word[k] & 0xffff0000u);
    } else {
      v[2 * k] = __half2float(__ushort_as_half(static_cast<unsigned short>(word[k] & 0xffffu)));
      v[2 * k + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(word[k] >> 16)));
    }
  }
}

__device__ __forceinline__ void from_float4(float4 a, float (&v)[kLanes]) {
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
}

__device__ __forceinline__ void load_lanes(const void* p, DType dt, int64_t i, int n, bool vec,
                                           float (&v)[kLanes]) {
  if (vec && dt == DType::kF32) {
    from_float4(*reinterpret_cast<const float4*>(static_cast<const float*>(p) + i), v);
  } else if (vec) {
    unpack16(*reinterpret_cast<const uint2*>(static_cast<const char*>(p) + i * 2), dt, v);
  } else {
#pragma unroll
    for (int l = 0; l < kLanes; ++l) v[l] = l < n ? load_f32(p, dt, i + l) : 0.0f;
  }
}

// Rows row0 .. row0 + rows - 1 of x at the thread's channels: every load of the stage
// is issued before the first conversion.
__device__ __forceinline__ void load_stage(const void* x, DType dt, int64_t x_row, int64_t row0,
                                           int rows, int64_t c0, int n, bool vec,
                                           float (&v)[kStage][kLanes]) {
  if (vec && dt == DType::kF32) {
    float4 raw[kStage];
#pragma unroll
    for (int r = 0; r < kStage; ++r)
      if (r < rows)
        raw[r] = *reinterpret_cast<const float4*>(static_cast<const float*>(x) +
                                                  (row0 + r) * x_row + c0);
#pragma unroll
    for (int r = 0; r < kStage; ++r)
      if (r < rows) from_float4(raw[r], v[r]);
  } else if (vec) {
    uint2 raw[kStage];
#pragma unroll
    for (int r = 0; r < kStage; ++r)
      if (r < rows)
        raw[r] = *reinterpret_cast<const uint2*>(static_cast<const char*>(x) +
                                                 ((row0 + r) * x_row + c0) * 2);
#pragma unroll
    for (int r = 0; r < kStage; ++r)
      if (r < rows) unpack16(raw[r], dt, v[r]);
  } else {
#pragma unroll
    for (int r = 0; r < kStage; ++r)
#pragma unroll
      for (int l = 0; l < kLanes; ++l)
        v[r][l] = r < rows && l < n ? load_f32(x, dt, (row0 + r) * x_row + c0 + l) : 0.0f;
  }
}

// Channels [i, i + n) of out from v, rounded to dt; vec as load_lanes.
__device__ __forceinline__ void store_lanes(void* p, DType dt, int64_t i, int n, bool vec,
                                            const float (&v)[kLanes]) {
  if (vec && dt == DType::kF32) {
    *reinterpret_cast<float4*>(static_cast<float*>(p) + i) = make_float4(v[0], v[1], v[2], v[3]);
  } else if (vec) {
    uint32_t word[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      uint32_t lo, hi;
      if (dt == DType::kBF16) {
        lo = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * k]));
        hi = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * k + 1]));
      } else {
        lo = __half_as_ushort(__float2half_rn(v[2 * k]));
        hi = __half_as_ushort(__float2half_rn(v[2 * k + 1]));
      }
      word[k] = lo | (hi << 16);
    }
    *reinterpret_cast<uint2*>(static_cast<char*>(p) + i * 2) = make_uint2(word[0], word[1]);
  } else {
#pragma unroll
    for (int l = 0; l < kLanes; ++l)
      if (l < n) store_f32(p, dt, i + l, v[l]);
  }
}

// Streaming form (T > B): out[t, c] = silu(sum_j w[c, j] win[t - K + 1 + j, c]) for the
// thread's kLanes channels from c0 and the runs blockIdx.y, + gridDim.y, ... of `run`
// tokens. The window's K-1 earlier rows stay in registers, so each x element is loaded
// once per run, plus K-1 rows before the run (from x, or from the state slot before the
// request's first token). The run's request is found once; at a request boundary inside
// the run the window restarts from the next request's slot. Rows before a request's
// first token come from its state slot (f32 [S, K-1, C], oldest first), which
// conv_state_kernel rolls afterwards, ordered after this kernel on the stream.
// x_vec / state_vec / out_vec: the host's check that their rows at multiples of kLanes
// channels can be read or written kLanes elements at a time (lanes_aligned).
template <int K>
__global__ void __launch_bounds__(kStreamThreads)
    conv_stream_kernel(const void* x, DType xdt, int64_t x_row, bool x_vec, const void* w,
                       DType wdt, const float* state, bool state_vec, const int32_t* start,
                       const int32_t* slot, int batch, void* out, DType odt, bool out_vec,
                       int64_t tokens, int64_t C, int run) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  constexpr int H = K - 1;
  const int64_t c0 = (int64_t(blockIdx.x) * kStreamThreads + threadIdx.x) * kLanes;
  if (c0 >= C) return;
  const int n = int(C - c0 < kLanes ? C - c0 : kLanes);
  const bool full = n == kLanes;
  float wt[kLanes][K];  // the weights of the thread's channels, taps oldest first
#pragma unroll
  for (int l = 0; l < kLanes; ++l)
#pragma unroll
    for (int j = 0; j < K; ++j) wt[l][j] = l < n ? load_f32(w, wdt, (c0 + l) * K + j) : 0.0f;
  // A slot's H rows into win[0 .. H-1].
  const auto load_slot = [&](int b, float(&win)[K][kLanes]) {
    const float* st = state + int64_t(slot[b]) * H * C + c0;
#pragma unroll
    for (int i = 0; i < H; ++i)
      load_lanes(st + int64_t(i) * C, DType::kF32, 0, n, state_vec && full, win[i]);
  };
  const int64_t runs = (tokens + run - 1) / run;
  for (int64_t r = blockIdx.y; r < runs; r += gridDim.y) {
    const int64_t r0 = r * run, r1 = r0 + run < tokens ? r0 + run : tokens;
    int b = request_of(start, batch, r0);
    int64_t next = start[b + 1];  // the first token past request b
    float win[K][kLanes];         // win[0 .. H-1]: the rows before the current token, oldest first
    {
      const int64_t t0 = start[b];
      const float* st = state + int64_t(slot[b]) * H * C + c0;
#pragma unroll
      for (int i = 0; i < H; ++i) {
        const int64_t u = r0 - H + i;  // the token of window row i
        if (u >= t0)
          load_lanes(x, xdt, u * x_row + c0, n, x_vec && full, win[i]);
        else
          load_lanes(st + (H + (u - t0)) * C, DType::kF32, 0, n, state_vec && full, win[i]);
      }
    }
    for (int64_t s0 = r0; s0 < r1; s0 += kStage) {
      const int rows = int(r1 - s0 < kStage ? r1 - s0 : kStage);
      float xs[kStage][kLanes];
      load_stage(x, xdt, x_row, s0, rows, c0, n, x_vec && full, xs);
#pragma unroll
      for (int i = 0; i < kStage; ++i) {
        if (i >= rows) break;
        const int64_t t = s0 + i;
        if (t == next) {  // request b ends: skip empty requests, restart from the next slot
          while (b + 1 < batch && start[b + 1] <= t) ++b;
          next = start[b + 1];
          load_slot(b, win);
        }
        float y[kLanes];
#pragma unroll
        for (int l = 0; l < kLanes; ++l) {
          win[H][l] = xs[i][l];
          float taps[K];
#pragma unroll
          for (int j = 0; j < K; ++j) taps[j] = win[j][l];
          y[l] = conv_silu(wt[l], taps, K, odt);
        }
        store_lanes(out, odt, t * C + c0, n, out_vec && full, y);
#pragma unroll
        for (int j = 0; j < H; ++j)
#pragma unroll
          for (int l = 0; l < kLanes; ++l) win[j][l] = win[j + 1][l];
      }
    }
  }
}

// Request-walking form (decode steps): the thread of (request, channel) keeps the window
// in registers, reads the slot's rows, walks the request's tokens and writes the last
// K-1 window rows back: one kernel, no roll. Correct for any lengths (its own slot's
// rows are read and written by this thread only: slots are distinct); a long request
// walks serially, so the op takes it only when the batch has no more tokens than
// requests.
__global__ void __launch_bounds__(kThreads)
    conv_request_kernel(const void* x, DType xdt, int64_t x_row, const void* w, DType wdt, int K,
                        float* state, const int32_t* start, const int32_t* slot, void* out,
                        DType odt, int64_t C) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= C) return;
  const int b = blockIdx.y, H = K - 1;
  const int64_t t0 = start[b], t1 = start[b + 1];
  if (t0 == t1) return;
  float wk[kMaxKernel];
#pragma unroll
  for (int j = 0; j < kMaxKernel; ++j)
    if (j < K) wk[j] = load_f32(w, wdt, c * K + j);
  float* st = state + int64_t(slot[b]) * H * C + c;
  float win[kMaxKernel];  // win[0 .. H-1]: the rows before the current token, oldest first
#pragma unroll
  for (int i = 0; i < kMaxKernel - 1; ++i)
    if (i < H) win[i] = st[int64_t(i) * C];
  for (int64_t t = t0; t < t1; ++t) {
#pragma unroll
    for (int i = 0; i < kMaxKernel; ++i)
      if (i == H) win[i] = load_f32(x, xdt, t * x_row + c);
    store_f32(out, odt, t * C + c, conv_silu(wk, win, K, odt));
#pragma unroll
    for (int i = 0; i < kMaxKernel - 1; ++i)
      if (i < H) win[i] = win[i + 1];
  }
#pragma unroll
  for (int i = 0; i < kMaxKernel - 1; ++i)
    if (i < H) st[int64_t(i) * C] = win[i];
}

// The slot keeps the last K-1 rows of [state rows; the request's tokens].
__global__ void __launch_bounds__(kThreads)
    conv_state_kernel(const void* x, DType xdt, int64_t x_row, int K, float* state,
                      const int32_t* start, const int32_t* slot, int64_t C) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= C) return;
  const int b = blockIdx.y, H = K - 1;
  const int64_t t0 = start[b], n = start[b + 1] - t0;
  if (n == 0) return;
  float* st = state + int64_t(slot[b]) * H * C + c;
  float rows[kMaxKernel];
  for (int i = 0; i < H; ++i) {  // window row n + i of H + n
    const int64_t r = n + i;
    rows[i] = r < H ? st[r * C] : load_f32(x, xdt, (t0 + r - H) * x_row + c);
  }
  for (int i = 0; i < H; ++i) st[int64_t(i) * C] = rows[i];
}

__global__ void __launch_bounds__(kThreads)
    gates_kernel(RowsRef a, RowsRef bb, const void* a_log, DType ldt, const void* dt_bias,
                 DType ddt, DType beta_round, float* g, float* beta, int64_t tokens, int hv) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= tokens * hv) return;
  const int64_t t = i / hv;
  const int h = int(i % hv);
  g[i] = gdn_gate::log_decay(load_f32(a.row(t), a.dtype, h), load_f32(a_log, ldt, h),
                             load_f32(dt_bias, ddt, h));
  beta[i] = gdn_gate::beta(load_f32(bb.row(t), bb.dtype, h), beta_round);
}

// Whether rows of `row` elements of `size` bytes from p can be read kLanes at a time at
// multiples of kLanes channels (conv_stream_kernel's vec flags).
bool lanes_aligned(const void* p, int64_t row, int64_t size) {
  return reinterpret_cast<uintptr_t>(p) % uintptr_t(kLanes * size) == 0 && row % kLanes == 0;
}

// conv_stream_kernel<K> for the run-time K (1 .. kMaxKernel).
template <int K = 1, class... Args>
void launch_stream(StreamState& st, int k, dim3 grid, Args&&... args) {
  if constexpr (K < kMaxKernel) {
    if (k != K) return launch_stream<K + 1>(st, k, grid, std::forward<Args>(args)...);
  }
  launch_kernel(st, "conv_stream_kernel", conv_stream_kernel<K>, grid, dim3(kStreamThreads), 0,
                std::forward<Args>(args)...);
}

}  // namespace

void causal_conv1d_silu(Stream& s, const Tensor& x, const Tensor& w, const Varlen& req,
                        const Tensor& conv_state, const Tensor& out) {
  const int64_t T = x.size(0), C = x.size(1), K = w.size(1), B = req.batch();
  VT_CHECK(K <= kMaxKernel, "causal_conv1d_silu (CUDA): kernel width ", K, " exceeds ", kMaxKernel);
  VT_CHECK(T < (int64_t(1) << 31), "causal_conv1d_silu (CUDA): too many tokens");
  if (B == 0 || C == 0) return;
  VT_CHECK(B <= 65535, "causal_conv1d_silu (CUDA): ", B, " requests exceed the grid");
  StreamState& st = s.cuda_state();
  set_device(st);
  const auto [d_start, d_slot] = device_varlen(st, req);
  const unsigned cblocks = unsigned((C + kThreads - 1) / kThreads);
  if (T <= B) {  // decode-shaped: one kernel, each (request, channel) walks its tokens
    launch_kernel(st, "conv_request_kernel", conv_request_kernel, dim3(cblocks, unsigned(B)),
                  dim3(kThreads), 0, x.data_ptr(), x.dtype(), x.stride(0), w.data_ptr(), w.dtype(),
                  int(K), conv_state.data<float>(), d_start, d_slot, out.data_ptr(), out.dtype(),
                  C);
    return;
  }
  // Streaming: the longest run (kMaxRun down to kStage tokens) that still gives each SM
  // ~512 threads (kStage 16-byte rows in flight each: ~64 KB a SM); shapes only, so a
  // captured graph replays with any indices.
  const int64_t groups = (C + kLanes - 1) / kLanes;
  const int64_t sblocks = (groups + kStreamThreads - 1) / kStreamThreads;
  const int64_t want = int64_t(std::max(st.num_sms, 1)) * 512;
  int run = kMaxRun;
  while (run > kStage && sblocks * kStreamThreads * ((T + run - 1) / run) < want) run /= 2;
  const int64_t runs = (T + run - 1) / run;
  const bool x_vec = lanes_aligned(x.data_ptr(), x.stride(0), int64_t(x.itemsize()));
  const bool out_vec = lanes_aligned(out.data_ptr(), C, int64_t(out.itemsize()));
  const bool state_vec = lanes_aligned(conv_state.data_ptr(), C, 4);
  launch_stream(st, int(K), dim3(unsigned(sblocks), unsigned(std::min<int64_t>(runs, 65535))),
                x.data_ptr(), x.dtype(), x.stride(0), x_vec, w.data_ptr(), w.dtype(),
                static_cast<const float*>(conv_state.data<float>()), state_vec, d_start, d_slot,
                int(B), out.data_ptr(), out.dtype(), out_vec, T, C, run);
  if (K > 1) {  // after the conv on the stream: every old slot row is read before this writes
    launch_kernel(st, "conv_state_kernel", conv_state_kernel, dim3(cblocks, unsigned(B)),
                  dim3(kThreads), 0, x.data_ptr(), x.dtype(), x.stride(0), int(K),
                  conv_state.data<float>(), d_start, d_slot, C);
  }
}

void gdn_gates(Stream& s, const Rows& a, const Rows& b, const Tensor& A_log, const Tensor& dt_bias,
               DType beta_round, const Tensor& g, const Tensor& beta) {
  const int64_t n = a.rows * a.cols;
  if (n == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  launch_kernel(st, "gates_kernel", gates_kernel, dim3(unsigned((n + kThreads - 1) / kThreads)),
                dim3(kThreads), 0, rows_ref(a), rows_ref(b), A_log.data_ptr(), A_log.dtype(),
                dt_bias.data_ptr(), dt_bias.dtype(), beta_round, g.data<float>(),
                beta.data<float>(), a.rows, int(a.cols));
}

}  // namespace vt::cuda
