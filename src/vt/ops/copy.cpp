#include "vt/ops/copy.h"

#include "vt/cpu/copy.h"
#include "vt/cuda/api.h"
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
  VT_CHECK(s.device().is_cuda() &&
               (src.device() == s.device() || dst.device() == s.device()),
           "copy: src ", src.str(), " to dst ", dst.str(), " needs a stream on their CUDA device, got ",
           s.device().str());
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

}  // namespace vt
