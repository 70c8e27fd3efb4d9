// Argument checks shared by the op entry points (vt/ops/*.cpp). Each throws
// vtllm::Error starting with the op's name and naming the argument.
#pragma once

#include <initializer_list>

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

// A tensor seen as [rows, cols]: cols is the last dim (stride 1), rows the product of
// the leading dims, which must collapse (dims laid out back to back merge) to one of
//   one level:  row r at r * row_stride: any contiguous tensor, a slice of rows, a
//               column slice of a matrix;
//   two levels: [outer, inner] with inner = inner_rows, row r = (r / inner, r % inner)
//               at (r / inner) * outer_stride + (r % inner) * row_stride: e.g. a
//               [T, H, D] per-head view of a column slice of a [T, W] projection
//               (strides W, D, 1: row_stride D, outer_stride W, inner_rows H).
// Strides in elements. Kernels address row r only through row() / offset() (host) or
// its device twin RowsRef (vt/cuda/common.cuh), never from row_stride alone; a kernel
// that cannot take the two-level form refuses it with expect_one_level().
struct Rows {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 1, cols = 1;
  int64_t row_stride = 1;    // between consecutive rows (of one outer index)
  int64_t inner_rows = 1;    // rows per outer index; >= rows in the one-level form
  int64_t outer_stride = 0;  // between outer indices (two-level form only)
  bool one_level() const { return inner_rows >= rows; }
  int64_t offset(int64_t r) const {  // of row r's first element, in elements
    return one_level() ? r * row_stride
                       : (r / inner_rows) * outer_stride + (r % inner_rows) * row_stride;
  }
  void* row(int64_t r) const {
    return static_cast<char*>(data) + offset(r) * int64_t(dtype_size(dtype));
  }
};
Rows rows_view(const Tensor& t, const char* op, const char* name);
// Throws "<op>: <name> ... needs rows of one stride" unless r is in the one-level form.
void expect_one_level(const Rows& r, const char* op, const char* name);

void expect_defined(const Tensor& t, const char* op, const char* name);
void expect_dtype(const Tensor& t, const char* op, const char* name, std::initializer_list<DType> ok);
void expect_shape(const Tensor& t, const char* op, const char* name, const Shape& shape);
// Every tensor lives on the stream's device.
void expect_device(const Stream& s, const char* op, std::initializer_list<const Tensor*> ts);
// out either is `in` (same data, strides and dtype: in place) or does not overlap it.
void expect_no_partial_alias(const Tensor& in, const Tensor& out, const char* op, const char* name);
void expect_no_alias(const Tensor& in, const Tensor& out, const char* op, const char* name);
[[noreturn]] void no_backend(const char* op, Device d);
// t is [tokens, heads, head_dim] in an activation dtype with head_dim contiguous (the
// token and head strides free: per-head views of a fused projection pass).
void expect_heads(const Tensor& t, const char* op, const char* name);

// {f32, bf16, f16}: the activation dtypes.
inline constexpr std::initializer_list<DType> kActDTypes = {DType::kF32, DType::kBF16, DType::kF16};

}  // namespace vt
