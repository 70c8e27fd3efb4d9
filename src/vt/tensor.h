// vt::Tensor: a refcounted, strided view of typed memory on one device.
//
// A Tensor is a handle: copying it is cheap and shares the storage. Views
// (slice, select, view, reshape, transpose, unsqueeze) share storage too and never
// copy; an operation that would need a copy throws instead (make a contiguous copy
// with vt::contiguous from vt/ops/copy.h). Strides and the offset are in elements.
// Ops state which layouts they accept and check them; is_contiguous() means
// row-major with no gaps.
//
// Thread-safety: a Tensor handle may be read from many threads; writing the
// elements concurrently is the caller's business.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "vt/device.h"
#include "vt/dtype.h"

namespace vt {

using Shape = std::vector<int64_t>;

// "[2, 3, 4]"
std::string shape_str(const Shape& s);
// Product of the sizes (1 for a 0-d shape); throws on a negative size.
int64_t shape_numel(const Shape& s);

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false and every accessor throws

  // Uninitialised contiguous memory (CPU: 64-byte aligned; CUDA: cudaMalloc).
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  // Wraps memory someone else owns (an mmap'ed checkpoint, a pinned buffer) without
  // copying. `keepalive` is held as long as any view exists; pass nullptr when the
  // caller guarantees the memory outlives every view. Contiguous.
  static Tensor from_blob(void* data, const Shape& shape, DType dtype, Device device,
                          std::shared_ptr<void> keepalive);

  bool defined() const { return defined_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int64_t dim() const { return int64_t(shape_.size()); }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  // size(d) and stride(d) accept negative d (-1 is the last dim).
  int64_t size(int64_t d) const { return shape_[norm_dim(d)]; }
  int64_t stride(int64_t d) const { return strides_[norm_dim(d)]; }
  int64_t numel() const { return numel_; }
  size_t itemsize() const { return dtype_size(dtype_); }
  size_t nbytes() const { return size_t(numel_) * itemsize(); }  // of the elements, not the storage
  int64_t offset() const { return offset_; }                      // in elements
  bool is_contiguous() const;

  // Address of element [0, 0, ...]. data<T>() checks T against dtype().
  void* data_ptr() const;
  template <class T>
  T* data() const {
    check_dtype(DTypeOf<T>::value, "data<T>()");
    return static_cast<T*>(data_ptr());
  }

  // ---- views (share storage)
  // Elements [start, end) of dim d; negative start/end count from the end.
  Tensor slice(int64_t d, int64_t start, int64_t end) const;
  // Index i of dim d, dim d removed.
  Tensor select(int64_t d, int64_t i) const;
  // A new shape over the same elements; the tensor must be contiguous. One size may be -1.
  Tensor view(const Shape& shape) const;
  // Like view, but also for non-contiguous tensors whose strides allow the new shape
  // (splitting dims, merging dims that are laid out back to back). Throws otherwise.
  Tensor reshape(const Shape& shape) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor unsqueeze(int64_t d) const;

  // "bf16[2, 3] cuda:0"
  std::string str() const;
  // Throws vtllm::Error "<op>: <what> is bf16[2, 3] cpu, expected dtype f32" style
  // messages; used by ops to validate arguments.
  void check_dtype(DType expected, const char* what) const;

  // The storage owner (for from_blob keepalive chains and aliasing checks).
  const std::shared_ptr<void>& storage() const { return storage_; }
  // True when the two tensors may overlap in memory.
  bool may_alias(const Tensor& other) const;

 private:
  size_t norm_dim(int64_t d, int64_t ndim = -1) const;
  void compute_numel();

  std::shared_ptr<void> storage_;  // owns (or keeps alive) the allocation
  void* base_ = nullptr;           // start of the allocation
  int64_t offset_ = 0;
  Shape shape_, strides_;
  int64_t numel_ = 0;
  DType dtype_ = DType::kF32;
  Device device_;
  bool defined_ = false;
};

// Contiguous (row-major) strides of a shape.
Shape contiguous_strides(const Shape& shape);

}  // namespace vt
