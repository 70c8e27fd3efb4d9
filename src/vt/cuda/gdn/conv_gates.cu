// CUDA causal_conv1d_silu and gdn_gates (vt/cuda/gdn.h). Arithmetic in the CPU
// reference's order (taps summed from the oldest), f32; with a narrow out the conv
// output rounds before SiLU and SiLU's result rounds (vt/ops/gdn.h).
#include <algorithm>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/gdn.h"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxKernel = 8;

// out[t, c] = silu(sum_j w[c, j] win[t - K + 1 + j, c]); rows before the request's first
// token come from its state slot (f32 [S, K-1, C], oldest first).
__global__ void __launch_bounds__(kThreads)
    conv_kernel(const void* x, DType xdt, int64_t x_row, const void* w, DType wdt, int K,
                const float* state, const int32_t* start, const int32_t* slot,
                const int32_t* req_of, void* out, DType odt, int64_t tokens, int64_t C) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= C) return;
  const int H = K - 1;
  for (int64_t t = blockIdx.y; t < tokens; t += gridDim.y) {
    const int b = req_of[t];
    const int64_t t0 = start[b];
    float acc = 0.0f;
    for (int j = 0; j < K; ++j) {
      const int64_t u = t - H + j;  // the token this tap reads
      const float xv = u >= t0 ? load_f32(x, xdt, u * x_row + c)
                               : state[(int64_t(slot[b]) * H + (H + (u - t0))) * C + c];
      acc += load_f32(w, wdt, c * K + j) * xv;
    }
    acc = round_to(acc, odt);  // narrow out: the conv output rounds before SiLU
    store_f32(out, odt, t * C + c, siluf(acc));
  }
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
  const float x = load_f32(a.row(t), a.dtype, h) + load_f32(dt_bias, ddt, h);
  const float softplus = x > 20.0f ? x : log1pf(expf(x));
  g[i] = -expf(load_f32(a_log, ldt, h)) * softplus;
  // sigmoid(b) rounds to beta_round (the oracle's bf16 beta, vt/ops/gdn.h).
  beta[i] = round_to(1.0f / (1.0f + expf(-load_f32(bb.row(t), bb.dtype, h))), beta_round);
}

// Device-index form: req_of[t] = b for the tokens of request b (one thread per request).
__global__ void req_of_kernel(const int32_t* start, int batch, int32_t* req_of) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  for (int t = start[b]; t < start[b + 1]; ++t) req_of[t] = b;
}

}  // namespace

void causal_conv1d_silu(Stream& s, const Tensor& x, const Tensor& w, const Varlen& req,
                        const Tensor& conv_state, const Tensor& out) {
  const int64_t T = x.size(0), C = x.size(1), K = w.size(1), B = req.batch();
  VT_CHECK(K <= kMaxKernel, "causal_conv1d_silu (CUDA): kernel width ", K, " exceeds ", kMaxKernel);
  VT_CHECK(T < (int64_t(1) << 31), "causal_conv1d_silu (CUDA): too many tokens");
  if (B == 0 || C == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const int32_t *d_start = req.d_start, *d_slot = req.d_slot, *d_req_of = nullptr;
  if (!req.on_device()) {
    std::vector<int32_t> idx;  // start [B+1], slot [B], req_of [T]
    for (int64_t v : req.start) idx.push_back(int32_t(v));
    for (int64_t v : req.slot) idx.push_back(int32_t(v));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = req.start[size_t(b)]; t < req.start[size_t(b + 1)]; ++t)
        idx.push_back(int32_t(b));
    const int32_t* d = upload_indices(st, idx);
    d_start = d;
    d_slot = d + B + 1;
    d_req_of = d + 2 * B + 1;
  } else if (T > 0) {
    int32_t* r = static_cast<int32_t*>(scratch(st, kIndexScratch, size_t(T) * 4));
    launch_kernel(st, "req_of_kernel", req_of_kernel, dim3(unsigned((B + 127) / 128)), dim3(128), 0,
                  d_start, int(B), r);
    d_req_of = r;
  }
  const unsigned cblocks = unsigned((C + kThreads - 1) / kThreads);
  if (T > 0) {
    launch_kernel(
        st, "conv_kernel", conv_kernel, dim3(cblocks, unsigned(std::min<int64_t>(T, 65535))),
        dim3(kThreads), 0, x.data_ptr(), x.dtype(), x.stride(0), w.data_ptr(), w.dtype(), int(K),
        conv_state.data<float>(), d_start, d_slot, d_req_of, out.data_ptr(), out.dtype(), T, C);
  }
  VT_CHECK(B <= 65535, "causal_conv1d_silu (CUDA): ", B, " requests exceed the grid");
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
