// vt/ops/moe.h: argument checks (once, before dispatch) and the backend choice.
#include "vt/ops/moe.h"

#include "vt/cpu/moe.h"
#include "vt/ops/activation.h"
#include "vt/ops/args.h"
#include "vt/ops/fill.h"
#include "vt/ops/gemm.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/moe.h"
#endif

namespace vt {

namespace {

void expect_contiguous(const Tensor& t, const char* op, const char* name) {
  VT_CHECK(t.is_contiguous(), op, ": ", name, " ", t.str(), " must be contiguous");
}

// topk_ids [T, k] i32 and topk_weights [T, k] in an activation dtype, contiguous.
void expect_routing(const Tensor& ids, const Tensor& weights, const char* op, int64_t T,
                    int64_t k) {
  expect_dtype(ids, op, "topk_ids", {DType::kI32});
  expect_dtype(weights, op, "topk_weights", kActDTypes);
  expect_shape(ids, op, "topk_ids", {T, k});
  expect_shape(weights, op, "topk_weights", {T, k});
  expect_contiguous(ids, op, "topk_ids");
  expect_contiguous(weights, op, "topk_weights");
}

// moe_experts' arguments (shapes, dtypes, contiguity, devices, aliasing) under `op`.
void check_experts(const Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                   const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& out,
                   const char* op) {
  expect_dtype(x, op, "x", kActDTypes);
  VT_CHECK(x.dim() == 2, op, ": x ", x.str(), " must be [tokens, hidden]");
  const int64_t T = x.size(0), H = x.size(1);
  expect_dtype(out, op, "out", {x.dtype()});
  expect_shape(out, op, "out", {T, H});
  expect_dtype(gate_up, op, "gate_up", {DType::kF32, DType::kBF16});
  expect_dtype(down, op, "down", {DType::kF32, DType::kBF16});
  VT_CHECK(
      gate_up.dim() == 3 && gate_up.size(1) % 2 == 0 && gate_up.size(1) > 0 && gate_up.size(2) == H,
      op, ": gate_up ", gate_up.str(), " must be [experts, 2 * intermediate, ", H, "]");
  const int64_t E = gate_up.size(0), I = gate_up.size(1) / 2;
  VT_CHECK(E > 0, op, ": gate_up ", gate_up.str(), " has no experts");
  expect_shape(down, op, "down", {E, H, I});
  VT_CHECK(topk_ids.dim() == 2 && topk_ids.size(1) >= 1, op, ": topk_ids ", topk_ids.str(),
           " must be [tokens, k]");
  expect_routing(topk_ids, topk_weights, op, T, topk_ids.size(1));
  for (const auto& [t, name] :
       {std::pair{&x, "x"}, {&gate_up, "gate_up"}, {&down, "down"}, {&out, "out"}})
    expect_contiguous(*t, op, name);
  expect_device(s, op, {&x, &gate_up, &down, &topk_ids, &topk_weights, &out});
  expect_no_alias(x, out, op, "x");
  expect_no_alias(topk_weights, out, op, "topk_weights");
}

}  // namespace

void moe_route(Stream& s, const Tensor& logits, int64_t k, Tensor& topk_ids, Tensor& topk_weights) {
  OpScope prof(s, "moe_route");
  const char* op = "moe_route";
  expect_dtype(logits, op, "logits", kActDTypes);
  VT_CHECK(logits.dim() == 2 && logits.size(1) > 0, op, ": logits ", logits.str(),
           " must be [tokens, experts]");
  const int64_t E = logits.size(1);
  VT_CHECK(k >= 1 && k <= E, op, ": k = ", k, " must be in [1, ", E, "]");
  expect_routing(topk_ids, topk_weights, op, logits.size(0), k);
  expect_device(s, op, {&logits, &topk_ids, &topk_weights});
  expect_no_alias(logits, topk_weights, op, "logits");
  if (logits.size(0) == 0) return;
  Rows lr = rows_view(logits, op, "logits");
  expect_one_level(lr, op, "logits");
  if (s.device().is_cpu()) return cpu::moe_route(s, lr, k, topk_ids, topk_weights);
#if VTLLM_WITH_CUDA
  cuda::moe_route(s, logits, k, topk_ids, topk_weights);
#else
  no_backend(op, s.device());
#endif
}

void moe_router(Stream& s, const Tensor& x, const Tensor& router_w, int64_t k, Tensor& logits,
                Tensor& topk_ids, Tensor& topk_weights) {
  OpScope prof(s, "moe_router");
  const char* op = "moe_router";
  expect_dtype(x, op, "x", kActDTypes);
  expect_dtype(router_w, op, "router_w", kActDTypes);
  expect_dtype(logits, op, "logits", kActDTypes);
  VT_CHECK(x.dim() == 2, op, ": x ", x.str(), " must be [tokens, hidden]");
  VT_CHECK(router_w.dim() == 2 && router_w.size(0) > 0 && router_w.size(1) == x.size(1), op,
           ": router_w ", router_w.str(), " must be [experts, ", x.size(1), "] for x ", x.str());
  const int64_t T = x.size(0), H = x.size(1), E = router_w.size(0);
  expect_shape(logits, op, "logits", {T, E});
  VT_CHECK(k >= 1 && k <= E, op, ": k = ", k, " must be in [1, ", E, "]");
  expect_routing(topk_ids, topk_weights, op, T, k);
  expect_device(s, op, {&x, &router_w, &logits, &topk_ids, &topk_weights});
  expect_no_alias(x, logits, op, "x");
  expect_no_alias(router_w, logits, op, "router_w");
  expect_no_alias(logits, topk_weights, op, "logits");
  if (prof.active()) {  // x and the router read, logits written, the routing written; 2 T E H
    const double t = double(T), e = double(E), h = double(H);
    prof.set_cost(t * h * double(x.itemsize()) + e * h * double(router_w.itemsize()) +
                      t * e * double(logits.itemsize()) +
                      t * double(k) * double(4 + topk_weights.itemsize()),
                  2 * t * e * h);
  }
  if (T == 0) return;
#if VTLLM_WITH_CUDA
  if (!s.device().is_cpu() && cuda::moe_router(s, x, router_w, k, logits, topk_ids, topk_weights))
    return;
#endif
  linear(s, x, router_w, logits);
  moe_route(s, logits, k, topk_ids, topk_weights);
}

void moe_experts(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                 const Tensor& topk_ids, const Tensor& topk_weights, Tensor& out) {
  OpScope prof(s, "moe_experts");
  const char* op = "moe_experts";
  check_experts(s, x, gate_up, down, topk_ids, topk_weights, out, op);
  const int64_t T = x.size(0), E = gate_up.size(0);
  if (T == 0) return;
  if (s.device().is_cpu()) {
    const int32_t* ids = topk_ids.data<int32_t>();
    for (int64_t i = 0; i < topk_ids.numel(); ++i)
      VT_CHECK(ids[i] >= 0 && ids[i] < E, op, ": topk_ids[", i / topk_ids.size(1), ", ",
               i % topk_ids.size(1), "] = ", ids[i], " is not an expert in [0, ", E, ")");
    return cpu::moe_experts(s, x, gate_up, down, topk_ids, topk_weights, out);
  }
#if VTLLM_WITH_CUDA
  cuda::moe_experts(s, x, gate_up, down, topk_ids, topk_weights, out);
#else
  no_backend(op, s.device());
#endif
}

void moe_experts_shared(Stream& s, const Tensor& x, const Tensor& gate_up, const Tensor& down,
                        const Tensor& topk_ids, const Tensor& topk_weights,
                        const Tensor& shared_gate_up, const Tensor& shared_down,
                        const Tensor& shared_gate, Tensor& out) {
  OpScope prof(s, "moe_experts_shared");
  const char* op = "moe_experts_shared";
  check_experts(s, x, gate_up, down, topk_ids, topk_weights, out, op);
  const int64_t T = x.size(0), H = x.size(1);
  expect_dtype(shared_gate_up, op, "shared_gate_up", {DType::kF32, DType::kBF16});
  expect_dtype(shared_down, op, "shared_down", {DType::kF32, DType::kBF16});
  expect_dtype(shared_gate, op, "shared_gate", {DType::kF32, DType::kBF16});
  VT_CHECK(
      shared_gate_up.dim() == 3 && shared_gate_up.size(0) == 1 && shared_gate_up.size(1) % 2 == 0 &&
          shared_gate_up.size(1) > 0 && shared_gate_up.size(2) == H,
      op, ": shared_gate_up ", shared_gate_up.str(), " must be [1, 2 * intermediate, ", H, "]");
  const int64_t Is = shared_gate_up.size(1) / 2;
  expect_shape(shared_down, op, "shared_down", {1, H, Is});
  expect_shape(shared_gate, op, "shared_gate", {1, H});
  for (const auto& [t, name] : {std::pair{&shared_gate_up, "shared_gate_up"},
                                {&shared_down, "shared_down"},
                                {&shared_gate, "shared_gate"}})
    expect_contiguous(*t, op, name);
  expect_device(s, op, {&shared_gate_up, &shared_down, &shared_gate});
  for (const auto& [t, name] : {std::pair{&shared_gate_up, "shared_gate_up"},
                                {&shared_down, "shared_down"},
                                {&shared_gate, "shared_gate"}})
    expect_no_alias(*t, out, op, name);
  if (T == 0) return;
#if VTLLM_WITH_CUDA
  if (!s.device().is_cpu() &&
      cuda::moe_experts_shared(s, x, gate_up, down, topk_ids, topk_weights, shared_gate_up,
                               shared_down, shared_gate, out))
    return;
#endif
  const DType dt = x.dtype();
  const Device dev = x.device();
  Tensor routed = Tensor::empty({T, H}, dt, dev);
  moe_experts(s, x, gate_up, down, topk_ids, topk_weights, routed);
  Tensor gate = Tensor::empty({T, 1}, dt, dev);
  linear(s, x, shared_gate, gate);
  sigmoid(s, gate, gate);
  Tensor zero_ids = Tensor::empty({T, 1}, DType::kI32, dev);
  zero(s, zero_ids);
  Tensor shared = Tensor::empty({T, H}, dt, dev);
  moe_experts(s, x, shared_gate_up, shared_down, zero_ids, gate, shared);
  add(s, routed, shared, out);
}

}  // namespace vt
