#include <algorithm>
#include <cmath>
#include <vector>

#include "vt/cpu/kernels.h"
#include "vt/cpu/rowio.h"

namespace vt::cpu {

namespace {
int64_t id_at(const Tensor& ids, int64_t t) {
  const char* p = static_cast<const char*>(ids.data_ptr());
  int64_t off = t * ids.stride(0);
  return ids.dtype() == DType::kI32 ? int64_t(reinterpret_cast<const int32_t*>(p)[off])
                                    : reinterpret_cast<const int64_t*>(p)[off];
}
}  // namespace

void embedding(Stream& s, const Rows& table, const Tensor& ids, const Rows& out) {
  const int64_t n = ids.size(0), h = table.cols, vocab = table.rows;
  for (int64_t t = 0; t < n; ++t) {  // check every id before writing anything
    int64_t id = id_at(ids, t);
    VT_CHECK(id >= 0 && id < vocab, "embedding: ids[", t, "] = ", id, " is outside the table's ",
             vocab, " rows");
  }
  s.parallel_for(n, std::max<int64_t>(1, 16384 / std::max<int64_t>(h, 1)), [&](int64_t t0, int64_t t1) {
    std::vector<float> row(static_cast<size_t>(h));
    for (int64_t t = t0; t < t1; ++t) {
      load_row(table.row(id_at(ids, t)), table.dtype, h, row.data());
      store_row(row.data(), h, out.dtype, out.row(t));
    }
  });
}

}  // namespace vt::cpu
