// Copies between tensors: across layouts, dtypes and devices.
//
//   copy(s, src, dst)     dst[i] = src[i]; src and dst have the same shape.
//     CPU -> CPU: any strides, any dtype pair within a group: floats (f32, f16,
//       bf16, f8e4m3; converted through f32, narrowing rounds to nearest even,
//       see vt/dtype.h) or integers (i8, i32, i64, u8; C++ conversion, values
//       out of range wrap). Float <-> integer is refused. Runs on the pool.
//     Within one CUDA device: as CPU -> CPU (any strides, conversions within a
//       group; f8e4m3 not yet), on `s`, that device's stream.
//     Between host and device: same dtype, both contiguous (a byte copy); `s` is
//       the CUDA stream and the copy is ordered on it. Other cases throw, naming them.
//     src and dst must not overlap unless they are the same view.
//   to_device(s, t, device)   a contiguous copy of t on `device` (t itself when it is
//     already there and contiguous). To the CPU it synchronizes `s`, so the result
//     is ready on return.
//   contiguous(s, t)          t if contiguous, else a contiguous copy on t's device.
//   to_dtype(s, t, dtype)     a contiguous copy converted to dtype (t if already so).
//   copy_rows(s, src, src_rows, dst, dst_rows)   dst[dst_rows[i], :] = src[src_rows[i], :]
//     for every i: a row gather, scatter or both in one launch. src [R, D] and dst [R', D]
//     of one dtype (any), 2-D, last dim contiguous, any row stride; src_rows and dst_rows
//     [n] i32 on the CPU, in range, dst_rows distinct (checked). dst may be src itself
//     when no row is both read and written (checked), else they must not overlap. Exact
//     (a byte copy), on the stream's device (CPU or CUDA).
#pragma once

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

void copy(Stream& s, const Tensor& src, Tensor& dst);
Tensor to_device(Stream& s, const Tensor& t, Device device);
Tensor contiguous(Stream& s, const Tensor& t);
Tensor to_dtype(Stream& s, const Tensor& t, DType dtype);
void copy_rows(Stream& s, const Tensor& src, const Tensor& src_rows, Tensor& dst,
               const Tensor& dst_rows);

}  // namespace vt
