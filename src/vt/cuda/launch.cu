// VTLLM_PDL (vt/cuda/launch.h): read once, here only.
#include <atomic>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "vt/cuda/launch.h"

namespace vt::cuda {

namespace {
std::atomic<int> forced{-1};  // -1: the environment decides; 0 / 1: ScopedPdl
}  // namespace

bool pdl_enabled() {
  const int f = forced.load(std::memory_order_relaxed);
  if (f >= 0) return f == 1;
  static const bool on = [] {
    const char* v = std::getenv("VTLLM_PDL");
    if (!v) return false;  // off until the H200 run (CudaPdl.*, the A/B) says otherwise
    const std::string s(v);
    VT_CHECK(s == "0" || s == "1", "VTLLM_PDL=", s, ": expected 0 or 1");
    return s == "1";
  }();
  return on;
}

ScopedPdl::ScopedPdl(bool on) : previous_(forced.exchange(on ? 1 : 0)) {}
ScopedPdl::~ScopedPdl() { forced.store(previous_); }

}  // namespace vt::cuda
