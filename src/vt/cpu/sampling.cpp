#include <algorithm>
#include <cmath>
#include <vector>

#include "vt/cpu/kernels.h"
#include "vt/cpu/rowio.h"

namespace vt::cpu {

void argmax(Stream& s, const Rows& logits, const Tensor& out) {
  const int64_t v = logits.cols;
  s.parallel_for(logits.rows, 1, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(v));
    for (int64_t r = r0; r < r1; ++r) {
      load_row(logits.row(r), logits.dtype, v, row.data());
      int64_t best = 0;
      for (int64_t i = 1; i < v; ++i) {
        if (std::isnan(row[size_t(best)])) break;
        if (row[size_t(i)] > row[size_t(best)] || std::isnan(row[size_t(i)])) best = i;
      }
      char* p = static_cast<char*>(out.data_ptr());
      if (out.dtype() == DType::kI32) {
        reinterpret_cast<int32_t*>(p)[r * out.stride(0)] = int32_t(best);
      } else {
        reinterpret_cast<int64_t*>(p)[r * out.stride(0)] = best;
      }
    }
  });
}

}  // namespace vt::cpu
