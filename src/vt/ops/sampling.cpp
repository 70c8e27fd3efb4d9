#include "vt/ops/sampling.h"

#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/sampling.h"
#endif

namespace vt {

void argmax(Stream& s, const Tensor& logits, Tensor& out) {
  const char* op = "argmax";
  expect_dtype(logits, op, "logits", kActDTypes);
  expect_dtype(out, op, "out", {DType::kI32, DType::kI64});
  VT_CHECK(logits.dim() == 2 && logits.size(1) > 0, op, ": logits ", logits.str(),
           " must be [tokens, vocab] with vocab > 0");
  expect_shape(out, op, "out", {logits.size(0)});
  expect_device(s, op, {&logits, &out});
  Rows lr = rows_view(logits, op, "logits");
  if (s.device().is_cpu()) return cpu::argmax(s, lr, out);
#if VTLLM_WITH_CUDA
  cuda::argmax(s, lr, out);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
