#include "vt/ops/embedding.h"

#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"

namespace vt {

void embedding(Stream& s, const Tensor& table, const Tensor& ids, Tensor& out) {
  const char* op = "embedding";
  expect_dtype(table, op, "table", kActDTypes);
  expect_dtype(ids, op, "ids", {DType::kI32, DType::kI64});
  expect_dtype(out, op, "out", kActDTypes);
  VT_CHECK(table.dim() == 2, op, ": table ", table.str(), " must be [vocab, hidden]");
  VT_CHECK(ids.dim() == 1, op, ": ids ", ids.str(), " must be [tokens]");
  expect_shape(out, op, "out", {ids.size(0), table.size(1)});
  expect_device(s, op, {&table, &ids, &out});
  expect_no_alias(table, out, op, "table");
  if (!s.device().is_cpu()) no_backend(op, s.device());
  cpu::embedding(s, rows_view(table, op, "table"), ids, rows_view(out, op, "out"));
}

}  // namespace vt
