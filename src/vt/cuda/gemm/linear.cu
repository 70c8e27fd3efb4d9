// cuBLASLt GEMM for linear: out[M, N] = x[M, K] . w[N, K]^T, row-major.
//
// cuBLASLt is column-major, so the product is computed as out^T[N, M] =
// op_T(w)[N, K] . x^T[K, M]: w read as a column-major [K, N] matrix (ld = its row
// stride) transposed, x as a column-major [K, M] matrix, out as a column-major
// [N, M] matrix (ld = its row stride) - the "TN" layout cuBLASLt's Hopper kernels
// favour. Descriptors and the heuristic's first algorithm are cached per shape,
// leading dims, dtypes, pointer alignment and epilogue on the stream (GemmPlans).
//
// A bias of out's dtype is added in cuBLASLt's epilogue (CUBLASLT_EPILOGUE_BIAS: the
// f32 accumulator plus the widened bias, rounded once), which is what the f32
// accumulator + add_bias composition computes, without its [M, N] f32 round trip.
// linear_gelu runs cuBLASLt's GELU epilogue (CUBLASLT_EPILOGUE_GELU[_BIAS], the tanh form)
// the same way, on the f32 accumulator plus bias before the one rounding.
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>

#include "vt/cuda/check.h"
#include "vt/cuda/elementwise.h"
#include "vt/cuda/encoder.h"
#include "vt/cuda/gemm.h"
#include "vt/cuda/stream_state.h"
#include "vt/ops/args.h"

namespace vt::cuda {

namespace {

struct PlanKey {
  int64_t m, n, k, ldx, ldw, ldo;
  DType in, out;
  uint8_t align_x, align_w, align_o;
  cublasLtEpilogue_t epilogue;  // a *_BIAS one takes the bias pointer set per call
  bool operator==(const PlanKey&) const = default;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& p) const noexcept {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (int64_t v : {p.m, p.n, p.k, p.ldx, p.ldw, p.ldo}) mix(uint64_t(v));
    mix(uint64_t(p.in) | uint64_t(p.out) << 8 | uint64_t(p.align_x) << 16 |
        uint64_t(p.align_w) << 24 | uint64_t(p.align_o) << 32 | uint64_t(p.epilogue) << 40);
    return size_t(h);
  }
};

struct Plan {
  bool ok = false;  // false: cuBLASLt has no algorithm (kept so it is asked once)
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kF16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

// The largest power of two (<= 16) dividing the address: cuBLASLt picks kernels by it.
uint8_t alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  for (uint8_t b = 16; b > 1; b >>= 1)
    if (a % b == 0) return b;
  return 1;
}

}  // namespace

struct GemmPlans {
  std::unordered_map<PlanKey, Plan, PlanKeyHash> plans;
};

void destroy_gemm_plans(GemmPlans* p) noexcept {
  if (!p) return;
  for (auto& [key, plan] : p->plans) {
    if (!plan.ok) continue;
    cublasLtMatrixLayoutDestroy(plan.a);
    cublasLtMatrixLayoutDestroy(plan.b);
    cublasLtMatrixLayoutDestroy(plan.c);
    cublasLtMatmulDescDestroy(plan.desc);
  }
  delete p;
}

namespace {

// The cached plan for key; !ok when cuBLASLt offers no algorithm for it.
const Plan& plan_for(StreamState& st, const PlanKey& key) {
  if (!st.gemm_plans) st.gemm_plans = new GemmPlans;
  auto it = st.gemm_plans->plans.find(key);
  if (it != st.gemm_plans->plans.end()) return it->second;
  Plan p;
  VT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  VT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  VT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (key.epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    VT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                   &key.epilogue, sizeof key.epilogue));
  VT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, cuda_type(key.in), uint64_t(key.k),
                                             uint64_t(key.n), key.ldw));
  VT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, cuda_type(key.in), uint64_t(key.k),
                                             uint64_t(key.m), key.ldx));
  VT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, cuda_type(key.out), uint64_t(key.n),
                                             uint64_t(key.m), key.ldo));
  cublasLtMatmulPreference_t pref = nullptr;
  VT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const size_t ws = StreamState::kWorkspaceBytes;
  const uint32_t ax = key.align_x, aw = key.align_w, ao = key.align_o;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                  &aw, sizeof aw);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                  &ax, sizeof ax);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                  &ao, sizeof ao);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                  &ao, sizeof ao);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(st.cublaslt, p.desc, p.a, p.b, p.c, p.c, pref, 1,
                                            &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.desc);
    if (status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED)
      VT_CUBLAS_CHECK(status);
    return st.gemm_plans->plans.emplace(key, Plan{}).first->second;
  }
  p.algo = result.algo;
  p.ok = true;
  return st.gemm_plans->plans.emplace(key, p).first->second;
}

// Whether an epilogue can write out for operands of dtype `in`: out of that dtype or f32,
// and a bias, if any, of out's dtype on a 16-byte boundary.
bool epilogue_fits(DType in, const Tensor& out, const Tensor& bias) {
  return (out.dtype() == in || out.dtype() == DType::kF32) &&
         (!bias.defined() || (bias.dtype() == out.dtype() && alignment(bias.data_ptr()) == 16));
}

// A leading dim cuBLASLt accepts: a single row may carry any stride.
int64_t ld_of(const Tensor& t) { return t.size(0) == 1 ? t.size(1) : t.stride(0); }

// out (dtype `in` or f32) = act(x . w^T (+ bias of out's dtype, when given)), x and w
// both of dtype `in`, act GELU (tanh) when `gelu`. False when cuBLASLt has no algorithm
// for an epilogue other than the default; throws when it has none for the plain product.
bool gemm(StreamState& st, const Tensor& x, const Tensor& w, const Tensor& out,
          const Tensor* bias = nullptr, bool gelu = false) {
  const cublasLtEpilogue_t epilogue =
      gelu ? (bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
           : (bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
  const PlanKey key{x.size(0),
                    w.size(0),
                    x.size(1),
                    ld_of(x),
                    ld_of(w),
                    ld_of(out),
                    x.dtype(),
                    out.dtype(),
                    alignment(x.data_ptr()),
                    alignment(w.data_ptr()),
                    alignment(out.data_ptr()),
                    epilogue};
  const Plan& p = plan_for(st, key);
  if (!p.ok) {
    if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) return false;
    VT_THROW("linear (CUDA): cuBLASLt has no algorithm for [", key.m, ", ", key.k, "] x [", key.n,
             ", ", key.k, "]^T in ", dtype_name(key.in), " -> ", dtype_name(key.out));
  }
  if (bias) {
    const void* ptr = bias->data_ptr();
    VT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ptr,
                                                   sizeof ptr));
  }
  const float one = 1.0f, zero = 0.0f;
  VT_CUBLAS_CHECK(cublasLtMatmul(st.cublaslt, p.desc, &one, w.data_ptr(), p.a, x.data_ptr(), p.b,
                                 &zero, out.data_ptr(), p.c, out.data_ptr(), p.c, &p.algo,
                                 st.workspace, StreamState::kWorkspaceBytes, st.stream));
  return true;
}

// t converted to `dtype`, and made dense when its rows overlap (a broadcast view).
Tensor operand(Stream& s, const Tensor& t, DType dtype) {
  if (t.dtype() == dtype && (t.size(0) == 1 || t.stride(0) >= t.size(1))) return t;
  Tensor f = Tensor::empty(t.shape(), dtype, t.device());
  copy_strided(s, t, f);
  return f;
}

}  // namespace

bool skinny_rule(int64_t m, int64_t n, int64_t k) {
  (void)k;  // the measured rule does not depend on K (gemm.h)
  return m >= 1 && m <= kSkinnyMaxM && n >= kSkinnyMinN;
}

bool use_skinny(const KernelConfig& kernels, const Tensor& x, const Tensor& w, const Tensor& out) {
  const Toggle mode = kernels.gemm_skinny;
  if (mode == Toggle::kOff || !skinny_supports(x, w, out)) return false;
  return mode == Toggle::kOn || skinny_rule(x.size(0), w.size(0), x.size(1));
}

void linear(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out) {
  if (x.size(0) > 0 && use_skinny(s.kernel_config(), x, w, out))
    return linear_skinny(s, x, w, bias, out);
  linear_cublaslt(s, x, w, bias, out);
}

void linear_cublaslt(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias,
                     const Tensor& out) {
  const int64_t m = x.size(0), n = w.size(0), k = x.size(1);
  if (m == 0 || n == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  // Mixed operands are both widened: the f32 products the contract states.
  const DType in = x.dtype() == w.dtype() ? x.dtype() : DType::kF32;
  const Tensor xa = operand(s, x, in), wa = operand(s, w, in);
  // The bias in the epilogue: out in the operands' dtype (or f32) and a bias of out's.
  const bool fused_bias = k > 0 && bias.defined() && epilogue_fits(in, out, bias);
  if (fused_bias && gemm(st, xa, wa, out, &bias)) return;
  const bool direct = !bias.defined() && (out.dtype() == in || out.dtype() == DType::kF32);
  const Tensor acc = direct || out.dtype() == DType::kF32
                         ? out
                         : Tensor::empty({m, n}, DType::kF32, out.device());
  if (k == 0) {
    fill(s, acc, 0.0);
  } else {
    gemm(st, xa, wa, acc);
  }
  if (bias.defined()) {
    add_bias(s, rows_view(acc, "linear", "acc"), bias, rows_view(out, "linear", "out"));
  } else if (!acc.may_alias(out)) {
    copy_strided(s, acc, out);
  }
}

void linear_gelu(Stream& s, const Tensor& x, const Tensor& w, const Tensor& bias, GeluKind kind,
                 const Tensor& out) {
  const int64_t m = x.size(0), n = w.size(0), k = x.size(1);
  if (m == 0 || n == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const DType in = x.dtype();
  const bool epilogue = kind == GeluKind::kTanh && k > 0 && w.dtype() == in &&
                        epilogue_fits(in, out, bias);
  if (epilogue && gemm(st, operand(s, x, in), operand(s, w, in), out,
                       bias.defined() ? &bias : nullptr, true))
    return;
  // The f32 sum (bias added), then the GELU pass and out's one rounding.
  const Tensor acc =
      out.dtype() == DType::kF32 ? out : Tensor::empty({m, n}, DType::kF32, out.device());
  linear_cublaslt(s, x, w, bias, acc);
  gelu(s, rows_view(acc, "linear_gelu", "acc"), kind, rows_view(out, "linear_gelu", "out"));
}

}  // namespace vt::cuda
