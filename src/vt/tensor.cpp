#include "vt/tensor.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <sstream>
#include <utility>

#include "vt/cuda/api.h"

namespace vt {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    VT_CHECK(d >= 0, "shape ", shape_str(s), " has a negative size");
    n *= d;
  }
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return st;
}

namespace {
// 64-byte aligned through plain malloc, the block's start kept in the word before the
// aligned address. Not aligned operator new: glibc before 2.38 serves it through
// memalign, which asks for size + alignment + 32 bytes and so never reuses a freed block
// of the same size; the CPU forward's tensors then fragment the engine thread's arena
// (tools/server_tests/soak.sh: RSS +8.6 MiB/min without end, flat with this).
std::shared_ptr<void> allocate_cpu(size_t bytes) {
  constexpr size_t kAlign = 64;
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  void* raw = std::malloc(rounded + kAlign + sizeof(void*));
  if (!raw) throw std::bad_alloc();
  auto at =
      (reinterpret_cast<uintptr_t>(raw) + sizeof(void*) + kAlign - 1) & ~uintptr_t{kAlign - 1};
  void* p = reinterpret_cast<void*>(at);
  static_cast<void**>(p)[-1] = raw;
  return std::shared_ptr<void>(p, [](void* q) { std::free(static_cast<void**>(q)[-1]); });
}
}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  Tensor t;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.compute_numel();
  t.defined_ = true;
  size_t bytes = t.nbytes();
  if (device.is_cpu()) {
    t.storage_ = allocate_cpu(bytes);
  } else {
    t.storage_ = cuda::allocate(bytes, device.index);
  }
  t.base_ = t.storage_.get();
  return t;
}

Tensor Tensor::from_blob(void* data, const Shape& shape, DType dtype, Device device,
                         std::shared_ptr<void> keepalive) {
  Tensor t;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.compute_numel();
  VT_CHECK(data != nullptr || t.numel_ == 0, "Tensor::from_blob: null data for shape ",
           shape_str(shape));
  t.defined_ = true;
  t.storage_ = std::move(keepalive);
  t.base_ = data;
  return t;
}

void Tensor::compute_numel() { numel_ = shape_numel(shape_); }

size_t Tensor::norm_dim(int64_t d, int64_t ndim) const {
  if (ndim < 0) ndim = dim();
  VT_CHECK(defined_, "use of an undefined tensor");
  VT_CHECK(d >= -ndim && d < ndim, "dim ", d, " is out of range for tensor ", str());
  return size_t(d < 0 ? d + ndim : d);
}

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  VT_CHECK(defined_, "data_ptr() of an undefined tensor");
  return static_cast<char*>(base_) + offset_ * int64_t(itemsize());
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end) const {
  size_t i = norm_dim(d);
  int64_t n = shape_[i];
  if (start < 0) start += n;
  if (end < 0) end += n;
  VT_CHECK(0 <= start && start <= end && end <= n, "slice(", d, ", ", start, ", ", end,
           ") is out of range for tensor ", str());
  Tensor t = *this;
  t.offset_ += start * strides_[i];
  t.shape_[i] = end - start;
  t.compute_numel();
  return t;
}

Tensor Tensor::select(int64_t d, int64_t idx) const {
  size_t i = norm_dim(d);
  if (idx < 0) idx += shape_[i];
  VT_CHECK(0 <= idx && idx < shape_[i], "select(", d, ", ", idx, ") is out of range for tensor ",
           str());
  Tensor t = *this;
  t.offset_ += idx * strides_[i];
  t.shape_.erase(t.shape_.begin() + i);
  t.strides_.erase(t.strides_.begin() + i);
  t.compute_numel();
  return t;
}

namespace {
// Resolves one -1 in `shape` so that it holds `numel` elements.
Shape infer_shape(Shape shape, int64_t numel, const std::string& who) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      VT_CHECK(infer < 0, who, ": more than one -1 in ", shape_str(shape));
      infer = int64_t(i);
    } else {
      VT_CHECK(shape[i] >= 0, who, ": negative size in ", shape_str(shape));
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    VT_CHECK(known > 0 && numel % known == 0, who, ": cannot infer -1 in ", shape_str(shape),
             " for ", numel, " elements");
    shape[size_t(infer)] = numel / known;
  }
  VT_CHECK(shape_numel(shape) == numel, who, ": shape ", shape_str(shape), " does not hold ",
           numel, " elements");
  return shape;
}
}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  VT_CHECK(defined_, "view() of an undefined tensor");
  VT_CHECK(is_contiguous(), "view(", shape_str(shape), ") of non-contiguous tensor ", str(),
           " (use reshape, or vt::contiguous first)");
  Tensor t = *this;
  t.shape_ = infer_shape(shape, numel_, "view of " + str());
  t.strides_ = contiguous_strides(t.shape_);
  return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
  VT_CHECK(defined_, "reshape() of an undefined tensor");
  if (is_contiguous()) return view(shape);
  Shape out = infer_shape(shape, numel_, "reshape of " + str());
  if (numel_ == 0) {
    Tensor t = *this;
    t.shape_ = out;
    t.strides_ = contiguous_strides(out);
    return t;
  }
  // Walk old and new dims in groups with equal element counts (PyTorch's
  // computeStride): each old group must be contiguous within itself.
  Shape old_sh, old_st;
  for (size_t i = 0; i < shape_.size(); ++i)
    if (shape_[i] != 1) old_sh.push_back(shape_[i]), old_st.push_back(strides_[i]);
  Shape new_st(out.size(), 1);
  size_t oi = 0;
  size_t ni = 0;
  while (ni < out.size()) {
    if (out[ni] == 1) {
      new_st[ni] = 1;
      ++ni;
      continue;
    }
    // Old group [oi, oj) whose product equals new group [ni, nj).
    int64_t op = old_sh[oi], np = out[ni];
    size_t oj = oi + 1, nj = ni + 1;
    while (op != np) {
      if (op < np) op *= old_sh[oj++];
      else np *= out[nj++];
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      VT_CHECK(old_st[k] == old_st[k + 1] * old_sh[k + 1], "reshape(", shape_str(shape),
               ") of tensor ", str(), " with strides ", shape_str(strides_),
               " needs a copy (use vt::contiguous first)");
    int64_t s = old_st[oj - 1];
    for (size_t k = nj; k-- > ni;) {
      new_st[k] = s;
      s *= out[k];
    }
    oi = oj;
    ni = nj;
    while (ni < out.size() && out[ni] == 1) new_st[ni++] = 1;
  }
  Tensor t = *this;
  t.shape_ = out;
  t.strides_ = new_st;
  return t;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  size_t a = norm_dim(d0), b = norm_dim(d1);
  Tensor t = *this;
  std::swap(t.shape_[a], t.shape_[b]);
  std::swap(t.strides_[a], t.strides_[b]);
  return t;
}

Tensor Tensor::unsqueeze(int64_t d) const {
  size_t i = norm_dim(d, dim() + 1);
  Tensor t = *this;
  int64_t st = i < strides_.size() ? strides_[i] * shape_[i] : 1;
  t.shape_.insert(t.shape_.begin() + i, 1);
  t.strides_.insert(t.strides_.begin() + i, st);
  return t;
}

std::string Tensor::str() const {
  if (!defined_) return "<undefined tensor>";
  return std::string(dtype_name(dtype_)) + shape_str(shape_) + " " + device_.str();
}

void Tensor::check_dtype(DType expected, const char* what) const {
  VT_CHECK(defined_, what, ": tensor is undefined");
  VT_CHECK(dtype_ == expected, what, ": tensor is ", str(), ", expected dtype ",
           dtype_name(expected));
}

bool Tensor::may_alias(const Tensor& other) const {
  if (!defined_ || !other.defined_ || numel_ == 0 || other.numel_ == 0) return false;
  if (!(device_ == other.device_)) return false;
  auto extent = [](const Tensor& t) {
    const char* lo = static_cast<const char*>(t.data_ptr());
    const char* hi = lo;
    for (size_t i = 0; i < t.shape_.size(); ++i) {
      int64_t span = (t.shape_[i] - 1) * t.strides_[i] * int64_t(t.itemsize());
      (span < 0 ? lo : hi) += span;
    }
    return std::pair(lo, hi + t.itemsize());
  };
  auto [a0, a1] = extent(*this);
  auto [b0, b1] = extent(other);
  return a0 < b1 && b0 < a1;
}

}  // namespace vt
