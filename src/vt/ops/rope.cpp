#include "vt/ops/rope.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/rope.h"
#endif

namespace vt {

namespace {
cpu::HeadsView heads_view(const Tensor& t, const char* op, const char* name) {
  expect_dtype(t, op, name, kActDTypes);
  VT_CHECK(t.dim() == 3, op, ": ", name, " ", t.str(), " must be [tokens, heads, head_dim]");
  VT_CHECK(t.stride(2) == 1 || t.size(2) == 1, op, ": ", name, " ", t.str(),
           " needs its head_dim contiguous");
  return {t.data_ptr(), t.dtype(), t.size(0), t.size(1), t.size(2), t.stride(0), t.stride(1)};
}

void check_table_args(const char* op, const Tensor& positions, int64_t rotary_dim, double theta) {
  expect_dtype(positions, op, "positions", {DType::kI32, DType::kI64});
  VT_CHECK(positions.dim() == 1, op, ": positions ", positions.str(), " must be [tokens]");
  VT_CHECK(rotary_dim > 0, op, ": rotary_dim ", rotary_dim, " must be positive");
  VT_CHECK(theta > 1.0, op, ": theta ", theta, " must be > 1");
}
}  // namespace

void rope_neox(Stream& s, const Tensor& x, const Tensor& cos_sin, Tensor& out, RopeMath math) {
  OpScope prof(s, "rope_neox");
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
  const bool f32_math = math == RopeMath::kF32 || out.dtype() == DType::kF32;
  if (s.device().is_cpu()) return cpu::rope_neox(s, xv, cos_sin, ov, f32_math);
#if VTLLM_WITH_CUDA
  // Row t * heads + h of the [T * heads, head_dim] views is (t, h), at one or two strides.
  cuda::rope_neox(s, rows_view(x, op, "x"), cos_sin, x.size(1), rows_view(out, op, "out"),
                  f32_math);
#else
  no_backend(op, s.device());
#endif
}

int64_t rope_table_width(int64_t rotary_dim) { return 2 * ((rotary_dim + 1) / 2); }

std::vector<float> rope_inv_freq(int64_t rotary_dim, double theta) {
  std::vector<float> inv_freq(static_cast<size_t>(rope_table_width(rotary_dim) / 2));
  for (size_t i = 0; i < inv_freq.size();
       ++i)  // f32 like HF: 1.0 / base ** (arange(0, D, 2).float() / D)
    inv_freq[i] = 1.0f / std::pow(float(theta), float(2 * int64_t(i)) / float(rotary_dim));
  return inv_freq;
}

Tensor rope_cos_sin_1d(const Tensor& positions, int64_t rotary_dim, double theta) {
  const char* op = "rope_cos_sin_1d";
  check_table_args(op, positions, rotary_dim, theta);
  VT_CHECK(positions.device().is_cpu(), op, ": positions ", positions.str(),
           " must be on the CPU (the stream form takes device positions)");
  const std::vector<float> inv_freq = rope_inv_freq(rotary_dim, theta);
  Tensor out = Tensor::empty({positions.size(0), rope_table_width(rotary_dim)}, DType::kF32);
  cpu::rope_cos_sin_rows(positions, inv_freq.data(), out, 0, positions.size(0));
  return out;
}

void rope_cos_sin_1d(Stream& s, const Tensor& positions, double theta, Tensor& out) {
  OpScope prof(s, "rope_cos_sin_1d");
  const char* op = "rope_cos_sin_1d";
  expect_dtype(out, op, "out", {DType::kF32});
  VT_CHECK(out.dim() == 2 && out.is_contiguous(), op, ": out ", out.str(),
           " must be a contiguous [tokens, rotary_dim]");
  check_table_args(op, positions, out.size(1), theta);
  VT_CHECK(out.size(1) % 2 == 0, op, ": out ", out.str(), " must have an even width");
  expect_shape(out, op, "out", {positions.size(0), out.size(1)});
  expect_device(s, op, {&positions, &out});
  const std::vector<float> inv_freq = rope_inv_freq(out.size(1), theta);
  if (s.device().is_cpu()) {
    const int64_t grain = std::max<int64_t>(1, 4096 / out.size(1));
    return s.parallel_for(positions.size(0), grain, [&](int64_t t0, int64_t t1) {
      cpu::rope_cos_sin_rows(positions, inv_freq.data(), out, t0, t1);
    });
  }
#if VTLLM_WITH_CUDA
  cuda::rope_cos_sin_1d(s, positions, inv_freq, out);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
