#include "vt/cpu/rowio.h"

#include <cstring>

#include "vt/cpu/dispatch.h"

namespace vt::cpu {

void load_row(const void* src, DType dt, int64_t n, float* dst) {
  if (dt == DType::kF32) {
    std::memcpy(dst, src, size_t(n) * 4);
    return;
  }
  visit_float(dt, "load_row", [&](auto tag) {
    const auto* p = static_cast<const decltype(tag)*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = to_f32(p[i]);
  });
}

void store_row(const float* src, int64_t n, DType dt, void* dst) {
  if (dt == DType::kF32) {
    std::memmove(dst, src, size_t(n) * 4);
    return;
  }
  visit_float(dt, "store_row", [&](auto tag) {
    using T = decltype(tag);
    auto* p = static_cast<T*>(dst);
    for (int64_t i = 0; i < n; ++i) p[i] = from_f32<T>(src[i]);
  });
}

}  // namespace vt::cpu
