#include "vt/ops/embedding.h"

#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"
#include "vt/ops/copy.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/sampling.h"
#endif

namespace vt {

void embedding(Stream& s, const Tensor& table, const Tensor& ids, Tensor& out) {
  const char* op = "embedding";
  expect_dtype(table, op, "table", kActDTypes);
  expect_dtype(ids, op, "ids", {DType::kI32, DType::kI64});
  expect_dtype(out, op, "out", kActDTypes);
  VT_CHECK(table.dim() == 2, op, ": table ", table.str(), " must be [vocab, hidden]");
  VT_CHECK(ids.dim() == 1, op, ": ids ", ids.str(), " must be [tokens]");
  expect_shape(out, op, "out", {ids.size(0), table.size(1)});
  expect_device(s, op, {&table, &out});
  VT_CHECK(ids.device() == s.device() || ids.device().is_cpu(), op, ": ids ", ids.str(),
           " must be on the CPU or the stream's device ", s.device().str());
  expect_no_alias(table, out, op, "table");
  Rows tr = rows_view(table, op, "table"), outr = rows_view(out, op, "out");
  if (s.device().is_cpu()) return cpu::embedding(s, tr, ids, outr);
#if VTLLM_WITH_CUDA
  // Every id is checked before anything is written; ids on the device are read back for
  // the check (a wait for the stream), so a runner keeps its ids on the host.
  const Tensor host_ids = ids.device().is_cpu() ? ids : to_device(s, ids, Device::cpu());
  for (int64_t t = 0; t < host_ids.size(0); ++t) {
    const int64_t id = host_ids.dtype() == DType::kI32
                           ? int64_t(host_ids.data<int32_t>()[t * host_ids.stride(0)])
                           : host_ids.data<int64_t>()[t * host_ids.stride(0)];
    VT_CHECK(id >= 0 && id < tr.rows, op, ": ids[", t, "] = ", id, " is outside the table's ",
             tr.rows, " rows");
  }
  cuda::embedding(s, tr, host_ids, outr);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
