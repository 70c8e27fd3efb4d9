// vt/profile_events.h without the CUDA backend: no CUDA stream exists, so nothing
// ever records an event; each entry point says so if called.
#include "vt/profile_events.h"

#if !VTLLM_WITH_CUDA

#include "base/error.h"

namespace vt::cuda {

void* create_timing_event() { VT_THROW("CUDA timing events: this vtllm was built without CUDA"); }
void destroy_timing_event(void*) noexcept {}
void record_event(StreamState&, void*) {
  VT_THROW("CUDA timing events: this vtllm was built without CUDA");
}
float event_elapsed_ms(void*, void*) {
  VT_THROW("CUDA timing events: this vtllm was built without CUDA");
}

}  // namespace vt::cuda

#endif
