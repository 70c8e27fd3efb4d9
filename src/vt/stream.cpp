#include "vt/stream.h"

#include <algorithm>
#include <thread>

#include "base/error.h"
#include "vt/thread_pool.h"

namespace vt {

Stream::Stream(Device device, int num_threads, const KernelConfig& kernels)
    : device_(device), kernels_(kernels) {
  if (device.is_cpu()) {
    if (num_threads <= 0) num_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    pool_ = std::make_unique<ThreadPool>(num_threads);
  } else {
    cuda_ = cuda::create_stream_state(device.index, &kernels_);
  }
}

Stream::~Stream() = default;

int Stream::num_threads() const { return pool_ ? pool_->num_threads() : 1; }

void Stream::parallel_for(int64_t n, int64_t grain,
                          const std::function<void(int64_t, int64_t)>& fn) {
  VT_CHECK(pool_, "Stream::parallel_for on a ", device_.str(), " stream (CPU streams only)");
  pool_->parallel_for(n, grain, fn);
}

void Stream::synchronize() {
  if (cuda_) cuda::synchronize(*cuda_);
}

void Stream::begin_capture() { cuda::begin_capture(cuda_state()); }
cuda::GraphExecPtr Stream::end_capture() { return cuda::end_capture(cuda_state()); }
void Stream::abort_capture() noexcept {
  if (cuda_) cuda::abort_capture(*cuda_);
}
void Stream::replay(cuda::GraphExec& graph) { cuda::replay(cuda_state(), graph); }
#if !VTLLM_WITH_CUDA
// Without CUDA no graph is ever captured (end_capture throws); with it, graph.cu defines this.
int64_t Stream::graph_kernel_nodes(const cuda::GraphExec&) { return 0; }
#endif

cuda::StreamState& Stream::cuda_state() {
  VT_CHECK(cuda_, "Stream::cuda_state on a ", device_.str(), " stream");
  return *cuda_;
}

}  // namespace vt
