// A GDN op's request layout (vt::Varlen) as the device pointers its kernels read (CUDA
// sources of cuda/gdn/ only).
#pragma once

#include <cstdint>
#include <vector>

#include "vt/cuda/stream_state.h"
#include "vt/ops/indices.h"

namespace vt::cuda {

// Request starts [B + 1] and state slots [B] on the device.
struct DeviceVarlen {
  const int32_t* start;
  const int32_t* slot;
};

// The device form's own pointers, or the host vectors uploaded as one index block (not
// while capturing: upload_indices refuses).
inline DeviceVarlen device_varlen(StreamState& st, const Varlen& req) {
  if (req.on_device()) return {req.d_start, req.d_slot};
  std::vector<int32_t> idx;
  idx.reserve(req.start.size() + req.slot.size());
  for (int64_t x : req.start) idx.push_back(int32_t(x));
  for (int64_t x : req.slot) idx.push_back(int32_t(x));
  const int32_t* d = upload_indices(st, idx);
  return {d, d + req.start.size()};
}

}  // namespace vt::cuda
