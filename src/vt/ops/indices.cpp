#include "vt/ops/indices.h"

#include <algorithm>

#include "vt/ops/args.h"

namespace vt {

std::vector<int64_t> read_index(const Tensor& t, const char* op, const char* name,
                                std::initializer_list<DType> ok) {
  expect_dtype(t, op, name, ok);
  VT_CHECK(t.dim() == 1 && t.device().is_cpu(), op, ": ", name, " ", t.str(),
           " must be a 1-D CPU tensor");
  std::vector<int64_t> v(static_cast<size_t>(t.size(0)));
  for (int64_t i = 0; i < t.size(0); ++i)
    v[size_t(i)] = t.dtype() == DType::kI64 ? t.data<int64_t>()[i * t.stride(0)]
                                            : int64_t(t.data<int32_t>()[i * t.stride(0)]);
  return v;
}

Varlen read_varlen(const Tensor& qsl, const Tensor& slots, int64_t tokens, int64_t num_slots,
                   const char* op) {
  Varlen r{read_index(qsl, op, "query_start_loc", {DType::kI32}),
           read_index(slots, op, "state_slots", {DType::kI32})};
  VT_CHECK(r.start.size() == r.slot.size() + 1, op, ": query_start_loc has ", r.start.size(),
           " entries for ", r.slot.size(), " state slots");
  VT_CHECK(r.start.front() == 0 && r.start.back() == tokens, op,
           ": query_start_loc must run from 0 to ", tokens, " tokens");
  std::vector<int64_t> seen;
  for (int64_t b = 0; b < r.batch(); ++b) {
    VT_CHECK(r.len(b) >= 0, op, ": query_start_loc decreases at request ", b);
    VT_CHECK(r.slot[size_t(b)] >= 0 && r.slot[size_t(b)] < num_slots, op, ": state_slots[", b,
             "] = ", r.slot[size_t(b)], " is not one of the ", num_slots, " slots");
    seen.push_back(r.slot[size_t(b)]);
  }
  std::sort(seen.begin(), seen.end());
  VT_CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end(), op,
           ": two requests share a state slot");
  return r;
}

}  // namespace vt
