#include "vt/ops/copy.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "vt/cpu/copy.h"
#include "vt/cuda/api.h"
#include "vt/ops/args.h"
#include "vt/ops/indices.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/elementwise.h"
#endif

namespace vt {

void copy(Stream& s, const Tensor& src, Tensor& dst) {
  OpScope prof(s, "copy");
  VT_CHECK(src.defined() && dst.defined(), "copy: undefined tensor");
  VT_CHECK(src.shape() == dst.shape(), "copy: src ", src.str(), " and dst ", dst.str(),
           " differ in shape");
  if (prof.active()) prof.set_cost(double(src.nbytes() + dst.nbytes()), 0);
  VT_CHECK(is_floating(src.dtype()) == is_floating(dst.dtype()), "copy: src ", src.str(),
           " to dst ", dst.str(), " mixes float and integer dtypes");
  if (src.device().is_cpu() && dst.device().is_cpu()) {
    VT_CHECK(s.device().is_cpu(), "copy: cpu tensors on a ", s.device().str(), " stream");
    if (src.may_alias(dst))
      VT_CHECK(src.data_ptr() == dst.data_ptr() && src.strides() == dst.strides() &&
                   src.dtype() == dst.dtype(),
               "copy: src ", src.str(), " and dst ", dst.str(), " overlap");
    cpu::copy(s, src, dst);
    return;
  }
  if (src.device() == dst.device()) {  // on one CUDA device: any strides, dtype conversion
    VT_CHECK(s.device() == src.device(), "copy: src ", src.str(), " to dst ", dst.str(),
             " needs a stream on their device, got ", s.device().str());
    if (src.may_alias(dst))
      VT_CHECK(src.data_ptr() == dst.data_ptr() && src.strides() == dst.strides() &&
                   src.dtype() == dst.dtype(),
               "copy: src ", src.str(), " and dst ", dst.str(), " overlap");
    if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous()) {
      if (src.numel() > 0 && src.data_ptr() != dst.data_ptr())
        cuda::memcpy_async(s.cuda_state(), dst.data_ptr(), src.data_ptr(), src.nbytes());
      return;
    }
#if VTLLM_WITH_CUDA
    cuda::copy_strided(s, src, dst);
    return;
#endif
  }
  VT_CHECK(src.dtype() == dst.dtype(), "copy: src ", src.str(), " to dst ", dst.str(),
           ": a copy between host and device cannot convert dtypes (convert on one side)");
  VT_CHECK(src.is_contiguous() && dst.is_contiguous(), "copy: src ", src.str(), " to dst ",
           dst.str(), ": a copy involving CUDA needs both contiguous");
  VT_CHECK(s.device().is_cuda() && (src.device() == s.device() || dst.device() == s.device()),
           "copy: src ", src.str(), " to dst ", dst.str(),
           " needs a stream on their CUDA device, got ", s.device().str());
  if (src.numel() == 0) return;
  cuda::memcpy_async(s.cuda_state(), dst.data_ptr(), src.data_ptr(), src.nbytes());
}

Tensor to_device(Stream& s, const Tensor& t, Device device) {
  OpScope prof(s, "to_device");
  if (t.device() == device && t.is_contiguous()) return t;
  Tensor src = t.is_contiguous() || !t.device().is_cpu() ? t : contiguous(s, t);
  Tensor out = Tensor::empty(t.shape(), t.dtype(), device);
  copy(s, src, out);
  if (device.is_cpu() && !s.device().is_cpu()) s.synchronize();
  return out;
}

Tensor contiguous(Stream& s, const Tensor& t) {
  OpScope prof(s, "contiguous");
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  copy(s, t, out);
  return out;
}

Tensor to_dtype(Stream& s, const Tensor& t, DType dtype) {
  OpScope prof(s, "to_dtype");
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.shape(), dtype, t.device());
  copy(s, t, out);
  return out;
}

void copy_rows(Stream& s, const Tensor& src, const Tensor& src_rows, Tensor& dst,
               const Tensor& dst_rows) {
  OpScope prof(s, "copy_rows");
  const char* op = "copy_rows";
  VT_CHECK(src.defined() && dst.defined(), op, ": undefined tensor");
  VT_CHECK(src.dim() == 2 && dst.dim() == 2 && src.size(1) == dst.size(1), op, ": src ", src.str(),
           " and dst ", dst.str(), " must be [rows, D] of one D");
  VT_CHECK(src.dtype() == dst.dtype(), op, ": src ", src.str(), " and dst ", dst.str(),
           " differ in dtype");
  VT_CHECK((src.size(1) <= 1 || src.stride(1) == 1) && (dst.size(1) <= 1 || dst.stride(1) == 1), op,
           ": src ", src.str(), " and dst ", dst.str(), " need a contiguous last dim");
  VT_CHECK(src.device() == s.device() && dst.device() == s.device(), op, ": src ", src.str(),
           " and dst ", dst.str(), " must be on the stream's device ", s.device().str());
  const std::vector<int64_t> from = read_index(src_rows, op, "src_rows", {DType::kI32});
  const std::vector<int64_t> to = read_index(dst_rows, op, "dst_rows", {DType::kI32});
  VT_CHECK(from.size() == to.size(), op, ": ", from.size(), " src_rows but ", to.size(),
           " dst_rows");
  for (size_t i = 0; i < from.size(); ++i) {
    VT_CHECK(from[i] >= 0 && from[i] < src.size(0), op, ": src_rows[", i, "] = ", from[i],
             " is not a row of ", src.str());
    VT_CHECK(to[i] >= 0 && to[i] < dst.size(0), op, ": dst_rows[", i, "] = ", to[i],
             " is not a row of ", dst.str());
  }
  std::vector<int64_t> written(to);
  std::sort(written.begin(), written.end());
  VT_CHECK(std::adjacent_find(written.begin(), written.end()) == written.end(), op,
           ": dst_rows repeats a row");
  const bool same = src.data_ptr() == dst.data_ptr() && src.strides() == dst.strides();
  if (same) {
    for (int64_t r : from)
      VT_CHECK(!std::binary_search(written.begin(), written.end(), r), op, ": row ", r,
               " is both read and written");
  } else {
    VT_CHECK(!src.may_alias(dst), op, ": src ", src.str(), " and dst ", dst.str(), " overlap");
  }
  const int64_t es = int64_t(dtype_size(src.dtype())), row_bytes = src.size(1) * es;
  if (prof.active()) prof.set_cost(double(2 * row_bytes * int64_t(from.size())), 0);
  const int64_t ss = src.stride(0) * es, ds = dst.stride(0) * es;
  if (s.device().is_cpu()) {
    const char* sp = static_cast<const char*>(src.data_ptr());
    char* dp = static_cast<char*>(dst.data_ptr());
    s.parallel_for(int64_t(from.size()), 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        std::memcpy(dp + to[size_t(i)] * ds, sp + from[size_t(i)] * ss, size_t(row_bytes));
    });
    return;
  }
#if VTLLM_WITH_CUDA
  const auto narrow = [](const std::vector<int64_t>& v) {
    return std::vector<int32_t>(v.begin(), v.end());
  };
  cuda::copy_rows(s, src.data_ptr(), ss, narrow(from), dst.data_ptr(), ds, narrow(to), row_bytes);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
