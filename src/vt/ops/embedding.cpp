#include "vt/ops/embedding.h"

#include "vt/cpu/kernels.h"
#include "vt/ops/args.h"
#include "vt/ops/copy.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/sampling.h"
#endif

namespace vt {

void embedding(Stream& s, const Tensor& table, const Tensor& ids, Tensor& out) {
  OpScope prof(s, "embedding");
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
  // Host ids are checked before anything is written; device ids are trusted
  // (vt/ops/indices.h): reading them back would wait for the stream.
  if (ids.device().is_cpu())
    for (int64_t t = 0; t < ids.size(0); ++t) {
      const int64_t id = ids.dtype() == DType::kI32 ? int64_t(ids.data<int32_t>()[t * ids.stride(0)])
                                                    : ids.data<int64_t>()[t * ids.stride(0)];
      VT_CHECK(id >= 0 && id < tr.rows, op, ": ids[", t, "] = ", id, " is outside the table's ",
               tr.rows, " rows");
    }
  cuda::embedding(s, tr, ids, outr);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
