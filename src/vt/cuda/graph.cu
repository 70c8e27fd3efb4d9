// CUDA graph capture and replay of one vt stream's work (contract: vt/cuda/api.h).
// Capture is relaxed (cudaStreamCaptureModeRelaxed) so that the caching allocator may
// cudaMalloc new graph-pool blocks while a capture is open; everything that would
// read host memory at replay is refused by upload_indices / memcpy_async instead.
#include "vt/cuda/allocator.h"
#include "vt/cuda/check.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

struct GraphExec {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  int device = 0;
};

void GraphExecDeleter::operator()(GraphExec* g) const noexcept {
  if (!g) return;
  cudaSetDevice(g->device);
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->graph) cudaGraphDestroy(g->graph);
  delete g;
}

bool capturing(const StreamState& s) { return s.capturing; }

void begin_capture(StreamState& s) {
  VT_CHECK(!s.capturing, "CUDA graph capture: a capture is already open on cuda:", s.device);
  set_device(s);
  begin_graph_pool(s.device);
  const cudaError_t e = cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) {
    end_graph_pool(s.device);
    detail::cuda_failed(e, "cudaStreamBeginCapture", __FILE__, __LINE__);
  }
  s.capturing = true;
  s.scratch_pinned = true;  // from now on scratch buffers are retired, never freed
}

GraphExecPtr end_capture(StreamState& s) {
  VT_CHECK(s.capturing, "CUDA graph capture: no capture is open on cuda:", s.device);
  set_device(s);
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(s.stream, &graph);
  s.capturing = false;
  end_graph_pool(s.device);
  GraphExecPtr g(new GraphExec);
  g->device = s.device;
  g->graph = graph;
  if (e != cudaSuccess || graph == nullptr) {
    cudaGetLastError();
    VT_THROW("CUDA graph capture on cuda:", s.device, " failed: ", cudaGetErrorName(e), " (",
             cudaGetErrorString(e), ")");
  }
  VT_CUDA_CHECK(cudaGraphInstantiateWithFlags(&g->exec, graph, 0));
  return g;
}

void abort_capture(StreamState& s) noexcept {
  if (!s.capturing) return;
  cudaSetDevice(s.device);
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(s.stream, &graph);  // invalidated captures end with an error
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  s.capturing = false;
  end_graph_pool(s.device);
}

void replay(StreamState& s, GraphExec& g) {
  VT_CHECK(!s.capturing, "CUDA graph replay inside a capture on cuda:", s.device);
  VT_CHECK(g.device == s.device, "CUDA graph of cuda:", g.device, " replayed on cuda:", s.device);
  set_device(s);
  VT_CUDA_CHECK(cudaGraphLaunch(g.exec, s.stream));
}

}  // namespace vt::cuda
