// CUDA graph capture and replay of one vt stream's work (contract: vt/cuda/api.h).
// Capture is relaxed (cudaStreamCaptureModeRelaxed) so that the caching allocator may
// cudaMalloc new graph-pool blocks while a capture is open; everything that would
// read host memory at replay is refused by upload_indices / memcpy_async instead.
#include <vector>

#include "vt/cuda/allocator.h"
#include "vt/cuda/check.h"
#include "vt/cuda/stream_state.h"
#include "vt/stream.h"

namespace vt::cuda {

struct GraphExec {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  int device = 0;
  int64_t kernel_nodes = 0;  // counted before instantiation (Stream::graph_kernel_nodes)
  int64_t programmatic_edges = 0;  // PDL edges (graph_programmatic_edges)
};

void GraphExecDeleter::operator()(GraphExec* g) const noexcept {
  if (!g) return;
  cudaSetDevice(g->device);
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->graph) cudaGraphDestroy(g->graph);
  delete g;
}

bool capturing(const StreamState& s) { return s.capturing; }

namespace {
// Kernel nodes of a captured graph; the capture records no child graphs, so a flat count
// is every launch of a replay.
int64_t count_kernel_nodes(cudaGraph_t graph) {
  size_t n = 0;
  VT_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) VT_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  int64_t kernels = 0;
  for (size_t i = 0; i < n; ++i) {
    cudaGraphNodeType type;
    VT_CUDA_CHECK(cudaGraphNodeGetType(nodes[i], &type));
    if (type == cudaGraphNodeTypeKernel) ++kernels;
  }
  return kernels;
}

// Edges that stream capture made programmatic: a launch with the PDL attribute
// (vt/cuda/launch.cuh, the skinny GEMM) after a kernel. A diagnostic only: -1 when the
// query fails, which must not fail the capture.
int64_t count_programmatic_edges(cudaGraph_t graph) {
  size_t n = 0;
  cudaError_t e = cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &n);
  std::vector<cudaGraphNode_t> from(n), to(n);
  std::vector<cudaGraphEdgeData> data(n);
  if (e == cudaSuccess && n > 0)
    e = cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  int64_t edges = 0;
  for (size_t i = 0; i < n; ++i)
    if (data[i].type == cudaGraphDependencyTypeProgrammatic) ++edges;
  return edges;
}
}  // namespace

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
  g->kernel_nodes = count_kernel_nodes(graph);
  g->programmatic_edges = count_programmatic_edges(graph);
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

int64_t graph_programmatic_edges(const GraphExec& g) { return g.programmatic_edges; }

void replay(StreamState& s, GraphExec& g) {
  VT_CHECK(!s.capturing, "CUDA graph replay inside a capture on cuda:", s.device);
  VT_CHECK(g.device == s.device, "CUDA graph of cuda:", g.device, " replayed on cuda:", s.device);
  set_device(s);
  VT_CUDA_CHECK(cudaGraphLaunch(g.exec, s.stream));
}

}  // namespace vt::cuda

namespace vt {
int64_t Stream::graph_kernel_nodes(const cuda::GraphExec& graph) { return graph.kernel_nodes; }
}  // namespace vt
