// The pinned staging ring (contract: vt/cuda/host_staging.h).
#include <algorithm>
#include <cstring>

#include "vt/cuda/check.h"
#include "vt/cuda/host_staging.h"

namespace vt::cuda {

namespace {
constexpr size_t kAlign = 256;  // each copy starts on its own 256-byte boundary
}

HostStaging::~HostStaging() {
  for (const InFlight& f : in_flight_) cudaEventDestroy(f.done);
  for (cudaEvent_t e : spare_events_) cudaEventDestroy(e);
  if (ring_) cudaFreeHost(ring_);
}

void HostStaging::wait_front() {
  InFlight f = in_flight_.front();
  in_flight_.pop_front();
  spare_events_.push_back(f.done);
  VT_CUDA_CHECK(cudaEventSynchronize(f.done));
}

void HostStaging::grow(size_t bytes) {
  while (!in_flight_.empty()) wait_front();
  const size_t cap = std::max({bytes, kInitialBytes, 2 * capacity_});
  if (ring_) VT_CUDA_CHECK(cudaFreeHost(ring_));
  ring_ = nullptr;
  capacity_ = 0;
  head_ = 0;
  VT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&ring_), cap, cudaHostAllocDefault));
  capacity_ = cap;
}

void HostStaging::copy_to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  const size_t need = (bytes + kAlign - 1) / kAlign * kAlign;
  if (need > capacity_) grow(need);
  // The region [begin, begin + need), after wrapping to 0 when the tail is too short
  // (the tail [head_, capacity_) is then claimed too). In-flight regions lie one after
  // another from head_ onwards, oldest first, so the ones the claim overlaps are a
  // prefix of in_flight_: wait for those.
  size_t begin = head_;
  bool wrapped = false;
  if (begin + need > capacity_) {
    begin = 0;
    wrapped = true;
  }
  auto overlaps = [&](const InFlight& f) {
    auto hits = [&](size_t lo, size_t hi) { return f.begin < hi && lo < f.end; };
    return wrapped ? hits(head_, capacity_) || hits(0, need) : hits(begin, begin + need);
  };
  while (!in_flight_.empty() && overlaps(in_flight_.front())) wait_front();
  std::memcpy(ring_ + begin, src, bytes);
  VT_CUDA_CHECK(cudaMemcpyAsync(dst, ring_ + begin, bytes, cudaMemcpyHostToDevice, stream));
  cudaEvent_t e = nullptr;
  if (!spare_events_.empty()) {
    e = spare_events_.back();
    spare_events_.pop_back();
  } else {
    VT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  const cudaError_t r = cudaEventRecord(e, stream);
  if (r != cudaSuccess) {
    spare_events_.push_back(e);
    detail::cuda_failed(r, "cudaEventRecord", __FILE__, __LINE__);
  }
  in_flight_.push_back({begin, begin + need, e});
  head_ = begin + need;
}

}  // namespace vt::cuda
