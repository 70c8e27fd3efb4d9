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

bool indices_on_device(const Stream& s, const char* op, std::initializer_list<NamedIndex> ts) {
  int host = 0, dev = 0;
  const char* first_host = nullptr;
  const char* first_dev = nullptr;
  for (const NamedIndex& n : ts) {
    if (!n.first->defined()) continue;
    const Device d = n.first->device();
    if (d.is_cpu()) {
      ++host;
      if (first_host == nullptr) first_host = n.second;
      continue;
    }
    VT_CHECK(d == s.device(), op, ": ", n.second, " ", n.first->str(),
             " must be on the CPU or the stream's device ", s.device().str());
    ++dev;
    if (first_dev == nullptr) first_dev = n.second;
  }
  VT_CHECK(host == 0 || dev == 0, op, ": index tensors must all be on the CPU or all on ",
           s.device().str(), " (", first_host, " is on the CPU, ", first_dev, " is not)");
  return dev > 0;
}

const void* device_index(const Tensor& t, const char* op, const char* name, DType dt, int64_t n) {
  expect_dtype(t, op, name, {dt});
  VT_CHECK((t.dim() == 1 || t.dim() == 2) && t.is_contiguous(), op, ": ", name, " ", t.str(),
           " on the device must be contiguous");
  VT_CHECK(n < 0 || (t.dim() == 1 && t.size(0) == n), op, ": ", name, " ", t.str(), " must have ",
           n, " entries");
  return t.data_ptr();
}

Varlen read_varlen(const Stream& s, const Tensor& qsl, const Tensor& slots, int64_t tokens,
                   int64_t num_slots, const char* op) {
  if (indices_on_device(s, op, {{&qsl, "query_start_loc"}, {&slots, "state_slots"}})) {
    VT_CHECK(slots.dim() == 1, op, ": state_slots ", slots.str(), " must be [requests]");
    Varlen r;
    r.d_batch = slots.size(0);
    r.d_slot = static_cast<const int32_t*>(device_index(slots, op, "state_slots", DType::kI32, -1));
    r.d_start = static_cast<const int32_t*>(
        device_index(qsl, op, "query_start_loc", DType::kI32, r.d_batch + 1));
    // Nothing about the values: padding rows of a graph may share a scratch slot.
    (void)tokens;
    (void)num_slots;
    return r;
  }
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
