// A pinned host ring that small host-to-device copies pass through (CUDA sources
// only). cudaMemcpyAsync from pageable memory may wait for the stream's earlier work;
// from pinned memory it only queues. Used by upload_indices (op index vectors) and by
// memcpy_async for small pageable sources.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <deque>
#include <vector>

namespace vt::cuda {

class HostStaging {
 public:
  HostStaging() = default;
  // The owner synchronizes the stream first (StreamStateDeleter does).
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Copies `bytes` of host `src` into the ring and queues the copy into device `dst`
  // on `stream` (the stream's device current). `src` may be reused or freed on return.
  // Ring space is reused once the event recorded after its copy has completed; the
  // host waits only when the device is a whole ring (kInitialBytes or more) behind.
  void copy_to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream);

  static constexpr size_t kInitialBytes = size_t(4) << 20;

 private:
  struct InFlight {
    size_t begin = 0, end = 0;
    cudaEvent_t done = nullptr;
  };
  void wait_front();
  void grow(size_t bytes);

  char* ring_ = nullptr;
  size_t capacity_ = 0;
  size_t head_ = 0;                 // where the next copy's bytes go
  std::deque<InFlight> in_flight_;  // oldest first; regions follow each other from head_
  std::vector<cudaEvent_t> spare_events_;
};

}  // namespace vt::cuda
