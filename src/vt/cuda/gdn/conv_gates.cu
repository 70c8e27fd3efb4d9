// CUDA causal_conv1d_silu and gdn_gates (vt/cuda/gdn.h). Arithmetic in the CPU
// reference's order (taps summed from the oldest), f32; with a narrow out the conv
// output rounds before SiLU and SiLU's result rounds (vt/ops/gdn.h). The two conv forms
// (a thread per (token, channel) plus the state roll, or a thread per (request,
// channel) walking its tokens) evaluate the same expression on the same window values,
// so they give the same bits.
#include <algorithm>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn.h"
#include "vt/cuda/gdn/gates.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxKernel = 8;

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

// One output of the conv: silu(sum_j w[j] win[j]) over the K window values, oldest first.
__device__ __forceinline__ float conv_silu(const void* w, DType wdt, int K, int64_t c,
                                           const float* win, DType odt) {
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxKernel; ++j)
    if (j < K) acc += load_f32(w, wdt, c * K + j) * win[j];
  return siluf(round_to(acc, odt));  // narrow out: the conv output rounds before SiLU
}

// Token-parallel form: out[t, c] = silu(sum_j w[c, j] win[t - K + 1 + j, c]); rows before
// the request's first token come from its state slot (f32 [S, K-1, C], oldest first).
// The slot is rolled afterwards by conv_state_kernel.
__global__ void __launch_bounds__(kThreads)
    conv_kernel(const void* x, DType xdt, int64_t x_row, const void* w, DType wdt, int K,
                const float* state, const int32_t* start, const int32_t* slot, int batch, void* out,
                DType odt, int64_t tokens, int64_t C) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= C) return;
  const int H = K - 1;
  for (int64_t t = blockIdx.y; t < tokens; t += gridDim.y) {
    const int b = request_of(start, batch, t);
    const int64_t t0 = start[b];
    float win[kMaxKernel];
#pragma unroll
    for (int j = 0; j < kMaxKernel; ++j) {
      const int64_t u = t - H + j;  // the token this tap reads
      if (j < K)
        win[j] = u >= t0 ? load_f32(x, xdt, u * x_row + c)
                         : state[(int64_t(slot[b]) * H + (H + (u - t0))) * C + c];
    }
    store_f32(out, odt, t * C + c, conv_silu(w, wdt, K, c, win, odt));
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
  float* st = state + int64_t(slot[b]) * H * C + c;
  float win[kMaxKernel];  // win[0 .. H-1]: the rows before the current token, oldest first
#pragma unroll
  for (int i = 0; i < kMaxKernel - 1; ++i)
    if (i < H) win[i] = st[int64_t(i) * C];
  for (int64_t t = t0; t < t1; ++t) {
#pragma unroll
    for (int i = 0; i < kMaxKernel; ++i)
      if (i == H) win[i] = load_f32(x, xdt, t * x_row + c);
    store_f32(out, odt, t * C + c, conv_silu(w, wdt, K, c, win, odt));
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
  const int32_t *d_start = req.d_start, *d_slot = req.d_slot;
  if (!req.on_device()) {
    std::vector<int32_t> idx;  // start [B+1], slot [B]
    for (int64_t v : req.start) idx.push_back(int32_t(v));
    for (int64_t v : req.slot) idx.push_back(int32_t(v));
    const int32_t* d = upload_indices(st, idx);
    d_start = d;
    d_slot = d + B + 1;
  }
  const unsigned cblocks = unsigned((C + kThreads - 1) / kThreads);
  if (T <= B) {  // decode-shaped: one kernel, each (request, channel) walks its tokens
    launch_kernel(st, "conv_request_kernel", conv_request_kernel, dim3(cblocks, unsigned(B)),
                  dim3(kThreads), 0, x.data_ptr(), x.dtype(), x.stride(0), w.data_ptr(), w.dtype(),
                  int(K), conv_state.data<float>(), d_start, d_slot, out.data_ptr(), out.dtype(),
                  C);
    return;
  }
  launch_kernel(
      st, "conv_kernel", conv_kernel, dim3(cblocks, unsigned(std::min<int64_t>(T, 65535))),
      dim3(kThreads), 0, x.data_ptr(), x.dtype(), x.stride(0), w.data_ptr(), w.dtype(), int(K),
      conv_state.data<float>(), d_start, d_slot, int(B), out.data_ptr(), out.dtype(), T, C);
  if (K > 1) {
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
