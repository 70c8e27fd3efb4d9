// vt/profile_events.h on CUDA.
#include <cuda_runtime.h>

#include "vt/cuda/check.h"
#include "vt/cuda/stream_state.h"
#include "vt/profile_events.h"

namespace vt::cuda {

void* create_timing_event() {
  cudaEvent_t e = nullptr;
  VT_CUDA_CHECK(cudaEventCreate(&e));
  return e;
}

void destroy_timing_event(void* event) noexcept {
  if (event) cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

void record_event(StreamState& s, void* event) {
  VT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), s.stream));
}

float event_elapsed_ms(void* start, void* end) {
  float ms = 0;
  VT_CUDA_CHECK(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)));
  return ms;
}

}  // namespace vt::cuda
