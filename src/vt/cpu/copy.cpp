#include "vt/cpu/copy.h"

#include <cstring>

#include "vt/cpu/dispatch.h"

namespace vt::cpu {

namespace {

template <class S, class D>
D convert(S v) {
  if constexpr (std::is_same_v<S, D>) {
    return v;
  } else if constexpr (std::is_integral_v<S>) {
    return D(v);
  } else {
    return from_f32<D>(to_f32(v));
  }
}

template <class S, class D>
void copy_rows(Stream& s, const Tensor& src, Tensor& dst) {
  const int64_t last = src.dim() ? src.size(-1) : 1;
  const int64_t ss = src.dim() ? src.stride(-1) : 1, ds = dst.dim() ? dst.stride(-1) : 1;
  const int64_t rows = last ? src.numel() / last : 0;
  const S* sp = static_cast<const S*>(src.data_ptr());
  D* dp = static_cast<D*>(dst.data_ptr());
  s.parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(last, 1)),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) {
                     const S* a = sp + row_offset(src, r);
                     D* b = dp + row_offset(dst, r);
                     for (int64_t i = 0; i < last; ++i) b[i * ds] = convert<S, D>(a[i * ss]);
                   }
                 });
}

}  // namespace

void copy(Stream& s, const Tensor& src, Tensor& dst) {
  if (src.numel() == 0) return;
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous()) {
    const char* a = static_cast<const char*>(src.data_ptr());
    char* b = static_cast<char*>(dst.data_ptr());
    int64_t n = int64_t(src.nbytes());
    s.parallel_for(n, 1 << 20, [&](int64_t b0, int64_t b1) { std::memcpy(b + b0, a + b0, size_t(b1 - b0)); });
    return;
  }
  if (is_floating(src.dtype())) {
    visit_float(src.dtype(), "copy", [&](auto s_tag) {
      visit_float(dst.dtype(), "copy", [&](auto d_tag) {
        copy_rows<decltype(s_tag), decltype(d_tag)>(s, src, dst);
      });
    });
  } else {
    visit_int(src.dtype(), "copy", [&](auto s_tag) {
      visit_int(dst.dtype(), "copy", [&](auto d_tag) {
        copy_rows<decltype(s_tag), decltype(d_tag)>(s, src, dst);
      });
    });
  }
}

}  // namespace vt::cpu
