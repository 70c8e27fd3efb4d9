#include "vt/ops/args.h"

namespace vt {

Rows rows_view(const Tensor& t, const char* op, const char* name) {
  expect_defined(t, op, name);
  Rows r;
  r.data = t.data_ptr();
  r.dtype = t.dtype();
  if (t.dim() == 0) return r;
  r.cols = t.size(-1);
  VT_CHECK(t.stride(-1) == 1 || r.cols == 1, op, ": ", name, " ", t.str(),
           " needs its last dim contiguous (stride ", t.stride(-1), ")");
  r.rows = 1;
  r.row_stride = r.cols;
  int64_t prev = -1;  // index of the previous leading dim with size > 1
  for (int64_t d = 0; d + 1 < t.dim(); ++d) {
    r.rows *= t.size(d);
    if (t.size(d) == 1) continue;
    if (prev >= 0)
      VT_CHECK(t.stride(prev) == t.stride(d) * t.size(d), op, ": ", name, " ", t.str(),
               " with strides ", shape_str(t.strides()),
               " has leading dims that do not collapse into rows (make it contiguous)");
    prev = d;
  }
  if (prev >= 0) r.row_stride = t.stride(prev);
  return r;
}

void expect_defined(const Tensor& t, const char* op, const char* name) {
  VT_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
}

void expect_dtype(const Tensor& t, const char* op, const char* name, std::initializer_list<DType> ok) {
  expect_defined(t, op, name);
  for (DType d : ok)
    if (t.dtype() == d) return;
  std::string list;
  for (DType d : ok) list += std::string(list.empty() ? "" : ", ") + dtype_name(d);
  VT_THROW(op, ": ", name, " is ", t.str(), ", expected dtype ", list);
}

void expect_shape(const Tensor& t, const char* op, const char* name, const Shape& shape) {
  expect_defined(t, op, name);
  VT_CHECK(t.shape() == shape, op, ": ", name, " is ", t.str(), ", expected shape ",
           shape_str(shape));
}

void expect_device(const Stream& s, const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    VT_CHECK(!t->defined() || t->device() == s.device(), op, ": tensor ", t->str(),
             " is not on the stream's device ", s.device().str());
}

void expect_no_partial_alias(const Tensor& in, const Tensor& out, const char* op, const char* name) {
  if (!in.may_alias(out)) return;
  VT_CHECK(in.data_ptr() == out.data_ptr() && in.strides() == out.strides() &&
               in.dtype() == out.dtype(),
           op, ": out ", out.str(), " partially overlaps ", name, " ", in.str());
}

void expect_no_alias(const Tensor& in, const Tensor& out, const char* op, const char* name) {
  VT_CHECK(!in.may_alias(out), op, ": out ", out.str(), " overlaps ", name, " ", in.str());
}

void no_backend(const char* op, Device d) {
  VT_THROW(op, ": no ", d.is_cuda() ? "CUDA" : "CPU", " implementation (tensors on ", d.str(), ")");
}

}  // namespace vt
