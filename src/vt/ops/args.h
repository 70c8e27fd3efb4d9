// Argument checks shared by the op entry points (vt/ops/*.cpp). Each throws
// vtllm::Error starting with the op's name and naming the argument.
#pragma once

#include <initializer_list>

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

// A tensor seen as [rows, cols]: cols is the last dim (stride 1), rows the product
// of the leading dims, which must collapse to a single row stride (in elements).
struct Rows {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 1, cols = 1, row_stride = 1;
  void* row(int64_t r) const {
    return static_cast<char*>(data) + r * row_stride * int64_t(dtype_size(dtype));
  }
};
Rows rows_view(const Tensor& t, const char* op, const char* name);

void expect_defined(const Tensor& t, const char* op, const char* name);
void expect_dtype(const Tensor& t, const char* op, const char* name, std::initializer_list<DType> ok);
void expect_shape(const Tensor& t, const char* op, const char* name, const Shape& shape);
// Every tensor lives on the stream's device.
void expect_device(const Stream& s, const char* op, std::initializer_list<const Tensor*> ts);
// out either is `in` (same data, strides and dtype: in place) or does not overlap it.
void expect_no_partial_alias(const Tensor& in, const Tensor& out, const char* op, const char* name);
void expect_no_alias(const Tensor& in, const Tensor& out, const char* op, const char* name);
[[noreturn]] void no_backend(const char* op, Device d);

// {f32, bf16, f16}: the activation dtypes.
inline constexpr std::initializer_list<DType> kActDTypes = {DType::kF32, DType::kBF16, DType::kF16};

}  // namespace vt
