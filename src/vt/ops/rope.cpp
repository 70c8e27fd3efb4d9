#include "vt/ops/rope.h"

#include <cmath>
#include <vector>

#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"

namespace vt {

namespace {
cpu::HeadsView heads_view(const Tensor& t, const char* op, const char* name) {
  expect_dtype(t, op, name, kActDTypes);
  VT_CHECK(t.dim() == 3, op, ": ", name, " ", t.str(), " must be [tokens, heads, head_dim]");
  VT_CHECK(t.stride(2) == 1 || t.size(2) == 1, op, ": ", name, " ", t.str(),
           " needs its head_dim contiguous");
  return {t.data_ptr(), t.dtype(), t.size(0), t.size(1), t.size(2), t.stride(0), t.stride(1)};
}
}  // namespace

void rope_neox(Stream& s, const Tensor& x, const Tensor& cos_sin, Tensor& out) {
  const char* op = "rope_neox";
  cpu::HeadsView xv = heads_view(x, op, "x"), ov = heads_view(out, op, "out");
  expect_shape(out, op, "out", x.shape());
  expect_dtype(cos_sin, op, "cos_sin", {DType::kF32});
  VT_CHECK(cos_sin.dim() == 2 && cos_sin.size(0) == x.size(0) && cos_sin.is_contiguous(), op,
           ": cos_sin ", cos_sin.str(), " must be a contiguous [", x.size(0), ", rotary_dim]");
  int64_t rd = cos_sin.size(1);
  VT_CHECK(rd > 0 && rd % 2 == 0 && rd <= x.size(2), op, ": rotary_dim ", rd,
           " must be even and within head_dim ", x.size(2));
  expect_device(s, op, {&x, &cos_sin, &out});
  expect_no_partial_alias(x, out, op, "x");
  if (!s.device().is_cpu()) no_backend(op, s.device());
  cpu::rope_neox(s, xv, cos_sin, ov);
}

Tensor rope_cos_sin_1d(const Tensor& positions, int64_t rotary_dim, double theta) {
  const char* op = "rope_cos_sin_1d";
  expect_dtype(positions, op, "positions", {DType::kI32, DType::kI64});
  VT_CHECK(positions.dim() == 1 && positions.device().is_cpu(), op, ": positions ",
           positions.str(), " must be a CPU [tokens]");
  VT_CHECK(rotary_dim > 0 && rotary_dim % 2 == 0, op, ": rotary_dim ", rotary_dim, " must be even");
  VT_CHECK(theta > 1.0, op, ": theta ", theta, " must be > 1");
  const int64_t n = positions.size(0), half = rotary_dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)  // f32 like HF: 1.0 / base ** (arange(0, R, 2).float() / R)
    inv_freq[size_t(i)] = 1.0f / std::pow(float(theta), float(2 * i) / float(rotary_dim));
  Tensor out = Tensor::empty({n, rotary_dim}, DType::kF32);
  float* o = out.data<float>();
  const char* p = static_cast<const char*>(positions.data_ptr());
  for (int64_t t = 0; t < n; ++t) {
    int64_t off = t * positions.stride(0);
    int64_t pos = positions.dtype() == DType::kI32 ? reinterpret_cast<const int32_t*>(p)[off]
                                                   : reinterpret_cast<const int64_t*>(p)[off];
    for (int64_t i = 0; i < half; ++i) {
      float angle = float(pos) * inv_freq[size_t(i)];
      o[t * rotary_dim + i] = float(std::cos(double(angle)));
      o[t * rotary_dim + half + i] = float(std::sin(double(angle)));
    }
  }
  return out;
}

}  // namespace vt
