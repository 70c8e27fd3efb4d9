// The CUDA entry points of vt/cuda/api.h for a build without the CUDA backend:
// every one that would need a GPU says so by name.
#include "vt/cuda/api.h"

#if !VTLLM_WITH_CUDA

#include "base/error.h"

namespace vt::cuda {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  VT_THROW(what, ": this vtllm was built without CUDA (configure with -DVTLLM_CUDA=ON on a "
                 "machine with nvcc)");
}
}  // namespace

int device_count() noexcept { return 0; }
MemInfo mem_get_info(int) { no_cuda("CUDA mem_get_info"); }
std::shared_ptr<void> allocate(size_t, int) { no_cuda("CUDA allocation"); }
AllocatorStats allocator_stats(int) { no_cuda("CUDA allocator_stats"); }
void reset_peak_in_use(int) { no_cuda("CUDA reset_peak_in_use"); }
void empty_cache(int) { no_cuda("CUDA empty_cache"); }
// No StreamState is ever created without CUDA, so there is nothing to delete.
void StreamStateDeleter::operator()(StreamState*) const noexcept {}
StreamStatePtr create_stream_state(int, const KernelConfig*) { no_cuda("CUDA stream creation"); }
void synchronize(StreamState&) { no_cuda("CUDA synchronize"); }
void memcpy_async(StreamState&, void*, const void*, size_t) { no_cuda("CUDA memcpy"); }
void GraphExecDeleter::operator()(GraphExec*) const noexcept {}
void begin_capture(StreamState&) { no_cuda("CUDA graph capture"); }
GraphExecPtr end_capture(StreamState&) { no_cuda("CUDA graph capture"); }
void abort_capture(StreamState&) noexcept {}
bool capturing(const StreamState&) { return false; }
void replay(StreamState&, GraphExec&) { no_cuda("CUDA graph replay"); }
int64_t graph_programmatic_edges(const GraphExec&) { return 0; }
size_t graph_pool_bytes(int) { return 0; }
void release_graph_pool(int) {}

}  // namespace vt::cuda

#endif
