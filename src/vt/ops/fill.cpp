#include "vt/ops/fill.h"

#include <algorithm>
#include <cmath>

#include "vt/cpu/dispatch.h"
#include "vt/ops/args.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/elementwise.h"
#endif

namespace vt {

namespace {
template <class T>
void fill_cpu(Stream& s, Tensor& t, T v) {
  const int64_t last = t.dim() ? t.size(-1) : 1, stride = t.dim() ? t.stride(-1) : 1;
  const int64_t rows = last ? t.numel() / last : 0;
  T* p = static_cast<T*>(t.data_ptr());
  s.parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(last, 1)),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) {
                     T* row = p + cpu::row_offset(t, r);
                     for (int64_t i = 0; i < last; ++i) row[i * stride] = v;
                   }
                 });
}
}  // namespace

void fill(Stream& s, Tensor& t, double value) {
  OpScope prof(s, "fill");
  const char* op = "fill";
  expect_defined(t, op, "t");
  expect_device(s, op, {&t});
  if (is_floating(t.dtype()))
    VT_CHECK(!std::isinf(value) || t.dtype() != DType::kF8E4M3, op, ": f8e4m3 has no infinity");
  else
    VT_CHECK(std::isfinite(value) && std::fabs(value) < 9.2e18, op, ": ", value,
             " is not an integer value for ", t.str());
  if (t.numel() == 0) return;
  if (s.device().is_cpu()) {
    if (is_floating(t.dtype())) {
      cpu::visit_float(t.dtype(), op, [&](auto tag) {
        using T = decltype(tag);
        fill_cpu<T>(s, t, from_f32<T>(float(value)));
      });
    } else {
      cpu::visit_int(t.dtype(), op, [&](auto tag) {
        using T = decltype(tag);
        fill_cpu<T>(s, t, T(value));
      });
    }
    return;
  }
#if VTLLM_WITH_CUDA
  cuda::fill(s, t, value);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
