#include <algorithm>
#include <cmath>
#include <vector>

#include "vt/cpu/kernels.h"
#include "vt/cpu/rounding.h"
#include "vt/cpu/rowio.h"

namespace vt::cpu {

void rope_neox(Stream& s, const HeadsView& x, const Tensor& cos_sin, const HeadsView& out,
               bool f32_math) {
  const int64_t rd = cos_sin.size(1), half = rd / 2, d = x.head_dim;
  const float* cs = cos_sin.data<float>();
  const int64_t xs = int64_t(dtype_size(x.dtype)), os = int64_t(dtype_size(out.dtype));
  s.parallel_for(x.tokens * x.heads, std::max<int64_t>(1, 8192 / std::max<int64_t>(d, 1)),
                 [&](int64_t i0, int64_t i1) {
                   std::vector<float> a(static_cast<size_t>(d));
                   for (int64_t i = i0; i < i1; ++i) {
                     int64_t t = i / x.heads, h = i % x.heads;
                     const char* src = static_cast<const char*>(x.data) +
                                       (t * x.token_stride + h * x.head_stride) * xs;
                     char* dst = static_cast<char*>(out.data) +
                                 (t * out.token_stride + h * out.head_stride) * os;
                     load_row(src, x.dtype, d, a.data());
                     const float* c = cs + t * rd;
                     const float* sn = c + half;
                     if (!f32_math)
                       rope_rotate_rounded(a.data(), c, sn, half, out.dtype);
                     else
                       for (int64_t j = 0; j < half; ++j) {
                         float x1 = a[size_t(j)], x2 = a[size_t(j + half)];
                         a[size_t(j)] = x1 * c[j] - x2 * sn[j];
                         a[size_t(j + half)] = x2 * c[j] + x1 * sn[j];
                       }
                     store_row(a.data(), d, out.dtype, dst);
                   }
                 });
}

void rope_cos_sin_rows(const Tensor& positions, const float* inv_freq, const Tensor& out,
                       int64_t t0, int64_t t1) {
  const int64_t rd = out.size(1), half = rd / 2;
  float* o = static_cast<float*>(out.data_ptr());
  const char* p = static_cast<const char*>(positions.data_ptr());
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t off = t * positions.stride(0);
    const int64_t pos = positions.dtype() == DType::kI32 ? reinterpret_cast<const int32_t*>(p)[off]
                                                         : reinterpret_cast<const int64_t*>(p)[off];
    for (int64_t i = 0; i < half; ++i) {
      const float angle = float(pos) * inv_freq[i];
      o[t * rd + i] = float(std::cos(double(angle)));
      o[t * rd + half + i] = float(std::sin(double(angle)));
    }
  }
}

}  // namespace vt::cpu
