#include "vt/ops/sampling.h"

#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"

namespace vt {

void argmax(Stream& s, const Tensor& logits, Tensor& out) {
  const char* op = "argmax";
  expect_dtype(logits, op, "logits", kActDTypes);
  expect_dtype(out, op, "out", {DType::kI32, DType::kI64});
  VT_CHECK(logits.dim() == 2 && logits.size(1) > 0, op, ": logits ", logits.str(),
           " must be [tokens, vocab] with vocab > 0");
  expect_shape(out, op, "out", {logits.size(0)});
  expect_device(s, op, {&logits, &out});
  if (!s.device().is_cpu()) no_backend(op, s.device());
  cpu::argmax(s, rows_view(logits, op, "logits"), out);
}

}  // namespace vt
