// CUDA moe_route (vt/ops/moe.h): one kernel, a warp per token, each running
// moe::route_token (moe/route.cuh: softmax in f32, k rounds of a warp argmax, the
// renormalised weights). No scratch, no host synchronisation: capturable in a CUDA graph.
#include <algorithm>
#include <cmath>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/moe.h"
#include "vt/cuda/moe/route.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kRouteWarps = 4;         // tokens per block
constexpr int kSmemBudget = 48 << 10;  // the default dynamic shared memory limit

__global__ void route_kernel(const char* logits, DType logits_dt, int64_t row_bytes, int64_t T,
                             int E, int k, int warps, int32_t* ids, void* weights, DType w_dt) {
  extern __shared__ float probs[];  // [warps][E]
  const int warp = threadIdx.x / kWarp;
  const int64_t t = int64_t(blockIdx.x) * warps + warp;
  if (t >= T) return;  // no block barrier below: warps are independent
  const char* row = logits + t * row_bytes;
  moe::route_token([&](int e) { return load_f32(row, logits_dt, e); }, probs + int64_t(warp) * E,
                   E, k, t, ids, weights, w_dt);
}

}  // namespace

void moe_route(Stream& s, const Tensor& logits, int64_t k, const Tensor& topk_ids,
               const Tensor& topk_weights) {
  const int64_t T = logits.size(0), E = logits.size(1);
  if (T == 0) return;
  VT_CHECK(k >= 1 && k <= moe::kMaxTopK, "moe_route (CUDA): k = ", k, " outside [1, ", moe::kMaxTopK, "]");
  VT_CHECK(E * int64_t(sizeof(float)) <= kSmemBudget, "moe_route (CUDA): ", E,
           " experts exceed the kernel's shared-memory row (", kSmemBudget / 4, ")");
  StreamState& st = s.cuda_state();
  set_device(st);
  // Fewer tokens per block when kRouteWarps rows would pass the shared-memory budget.
  const int64_t row_smem = E * int64_t(sizeof(float));
  const int warps = int(std::min<int64_t>(kRouteWarps, kSmemBudget / row_smem));
  const int64_t blocks = (T + warps - 1) / warps;
  VT_CHECK(blocks <= int64_t(0x7fffffff), "moe_route (CUDA): ", T, " tokens exceed the grid");
  route_kernel<<<unsigned(blocks), warps * kWarp, size_t(warps * row_smem), st.stream>>>(
      static_cast<const char*>(logits.data_ptr()), logits.dtype(),
      logits.stride(0) * int64_t(dtype_size(logits.dtype())), T, int(E), int(k), warps,
      static_cast<int32_t*>(topk_ids.data_ptr()), topk_weights.data_ptr(), topk_weights.dtype());
  VT_CUDA_CHECK_LAUNCH("route_kernel");
}

}  // namespace vt::cuda
