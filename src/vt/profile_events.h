// CUDA timing events for vt::Profiler (vt/cuda/profile_events.cu; without CUDA,
// vt/profile_events_absent.cpp throws). Internal to vt. Handles are cudaEvent_t.
#pragma once

#include "vt/cuda/api.h"

namespace vt::cuda {

// A new event with timing enabled; destroy_timing_event releases it.
void* create_timing_event();
void destroy_timing_event(void* event) noexcept;
// Records `event` on the stream.
void record_event(StreamState& s, void* event);
// Milliseconds between two recorded events that have completed (the stream synchronized).
float event_elapsed_ms(void* start, void* end);

}  // namespace vt::cuda
