#include "vt/ops/args.h"

#include <algorithm>
#include <vector>

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
  for (int64_t d = 0; d + 1 < t.dim(); ++d) r.rows *= t.size(d);
  r.row_stride = r.cols;
  r.inner_rows = std::max<int64_t>(r.rows, 1);
  if (r.rows == 0) return r;
  // The leading dims of size > 1, outermost first, merged where one is laid out right
  // after the next (PyTorch's collapse); one level or two may remain.
  struct Level {
    int64_t size, stride;
  };
  std::vector<Level> levels;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) {
    if (t.size(d) == 1) continue;
    if (!levels.empty() && levels.back().stride == t.stride(d) * t.size(d)) {
      levels.back() = {levels.back().size * t.size(d), t.stride(d)};
    } else {
      levels.push_back({t.size(d), t.stride(d)});
    }
  }
  VT_CHECK(levels.size() <= 2, op, ": ", name, " ", t.str(), " with strides ",
           shape_str(t.strides()),
           " has leading dims that do not collapse into one or two row strides (make it "
           "contiguous)");
  if (!levels.empty()) r.row_stride = levels.back().stride;
  if (levels.size() == 2) {
    r.inner_rows = levels[1].size;
    r.outer_stride = levels[0].stride;
  }
  return r;
}

void expect_one_level(const Rows& r, const char* op, const char* name) {
  VT_CHECK(r.one_level(), op, ": ", name, " has rows at two strides (", r.rows / r.inner_rows,
           " x ", r.inner_rows, " rows, strides ", r.outer_stride, " and ", r.row_stride,
           "), this backend needs rows of one stride (make it contiguous)");
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

void expect_heads(const Tensor& t, const char* op, const char* name) {
  expect_dtype(t, op, name, kActDTypes);
  VT_CHECK(t.dim() == 3, op, ": ", name, " ", t.str(), " must be [tokens, heads, head_dim]");
  VT_CHECK(t.stride(2) == 1 || t.size(2) == 1, op, ": ", name, " ", t.str(),
           " needs its head_dim contiguous");
}

void no_backend(const char* op, Device d) {
  VT_THROW(op, ": no ", d.is_cuda() ? "CUDA" : "CPU", " implementation (tensors on ", d.str(), ")");
}

}  // namespace vt
