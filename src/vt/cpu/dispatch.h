// Helpers for CPU kernels (internal to vt): dtype dispatch and row iteration.
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/error.h"
#include "vt/dtype.h"
#include "vt/tensor.h"

namespace vt::cpu {

// Calls f(T{}) with T the storage type of a float dtype; throws for the others.
template <class F>
decltype(auto) visit_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::kF32: return f(float{});
    case DType::kBF16: return f(BF16{});
    case DType::kF16: return f(F16{});
    case DType::kF8E4M3: return f(F8E4M3{});
    default: VT_THROW(op, ": dtype ", dtype_name(t), " is not a float type");
  }
}

// Calls f(T{}) with T the storage type of an integer dtype; throws for the others.
template <class F>
decltype(auto) visit_int(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::kI8: return f(int8_t{});
    case DType::kI32: return f(int32_t{});
    case DType::kI64: return f(int64_t{});
    case DType::kU8: return f(uint8_t{});
    default: VT_THROW(op, ": dtype ", dtype_name(t), " is not an integer type");
  }
}

// Element offset (in elements, relative to data_ptr()) of row r when the tensor is
// seen as [rows, last dim]: every dim but the last is unravelled.
inline int64_t row_offset(const Tensor& t, int64_t r) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 2; d >= 0; --d) {
    int64_t n = t.size(d);
    off += (r % n) * t.stride(d);
    r /= n;
  }
  return off;
}

}  // namespace vt::cpu
