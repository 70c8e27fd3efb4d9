#include "engine/decode_graphs.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "vt/memory.h"
#include "vt/ops/embedding.h"

namespace vtllm::engine {

std::vector<int32_t> graph_sizes(int32_t max_batch) {
  std::vector<int32_t> v;
  for (int32_t n : {1, 2, 4})
    if (n <= max_batch) v.push_back(n);
  for (int32_t n = 8; n <= max_batch; n += n < 32 ? 8 : 16) v.push_back(n);
  if (max_batch > 0 && (v.empty() || v.back() != max_batch)) v.push_back(max_batch);
  return v;
}

int32_t graph_size_for(const std::vector<int32_t>& sizes, int64_t batch) {
  for (int32_t n : sizes)
    if (n >= batch) return n;
  return 0;
}

// One captured decode step: the graph and the logits [size, vocab] it writes.
struct DecodeGraphs::Graph {
  int32_t size = 0;
  vt::cuda::GraphExecPtr exec;  // the type vt::Stream::end_capture returns
  vt::Tensor logits;  // held: its graph-pool block must not serve another graph
  int64_t kernel_nodes = 0;
};

DecodeGraphs::DecodeGraphs(models::Model& model, vt::Stream& s, models::ModelCache& cache,
                           const GraphOptions& options, int64_t num_blocks, int64_t block_size,
                           int32_t pad_state_slot)
    : model_(model),
      stream_(s),
      cache_(cache),
      opts_(options),
      block_size_(block_size),
      pad_state_slot_(pad_state_slot) {
  VT_CHECK(s.device().is_cuda(), "decode graphs: need a CUDA stream, got ", s.device().str());
  opts_.max_context = std::min<int64_t>(opts_.max_context, (num_blocks - 1) * block_size);
  enabled_ = !opts_.enforce_eager && opts_.max_batch > 0 && opts_.max_context > 0;
  sizes_ = graph_sizes(opts_.max_batch);
}

DecodeGraphs::~DecodeGraphs() {
  if (graphs_.empty()) return;
  try {
    stream_.synchronize();
    graphs_.clear();
    inputs_ = vt::Tensor();
    vt::release_graph_pool(stream_.device());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vtllm: releasing CUDA graphs failed: %s\n", e.what());
  }
}

std::vector<DecodeGraphs::GraphKernels> DecodeGraphs::kernel_counts() const {
  std::vector<GraphKernels> out;
  for (const auto& g : graphs_) out.push_back({g->size, g->kernel_nodes});
  return out;
}

models::StepLayout DecodeGraphs::layout_for(int32_t size) const {
  models::StepLayout l;
  l.batch = size;
  l.table_width = (opts_.max_context + block_size_ - 1) / block_size_;
  l.pad_state_slot = pad_state_slot_;
  l.bounds = vt::AttentionBounds{size, 1, opts_.max_context};
  return l;
}

void DecodeGraphs::ensure_input_buffer() {
  if (inputs_.defined()) return;  // outside the graph pool, sized for the largest capture
  const int64_t bytes = model_.packed_input_bytes(layout_for(sizes_.back()));
  inputs_ = vt::Tensor::empty({(bytes + 7) / 8}, vt::DType::kI64, stream_.device());
}

bool DecodeGraphs::takes(const StepPlan& p) const {
  const int64_t B = p.num_requests();
  if (!enabled_ || B == 0 || p.logits_indices.empty() || p.num_tokens() != B) return false;
  for (int64_t r = 0; r < B; ++r)
    if (p.query_start_loc[size_t(r + 1)] - p.query_start_loc[size_t(r)] != 1 ||
        p.context_lens[size_t(r)] <= 0 || p.seq_lens[size_t(r)] > opts_.max_context)
      return false;
  const int32_t size = graph_size_for(sizes_, B);
  return size != 0 && p.max_blocks_per_seq <= layout_for(size).table_width;
}

DecodeGraphs::Graph& DecodeGraphs::graph_for(int32_t size) {
  for (auto& g : graphs_)
    if (g->size == size) return *g;
  ensure_input_buffer();
  // A step of padding rows only: it reads the null block and writes the scratch slot.
  models::ForwardBatch pad;
  pad.block_size = int(block_size_);
  pad.query_start_loc = {0};
  const models::StepLayout layout = layout_for(size);
  const models::BatchInputs in = model_.prepare(stream_, pad, cache_, &layout, &inputs_);
  std::vector<int32_t> rows(static_cast<size_t>(size));
  for (int32_t r = 0; r < size; ++r) rows[size_t(r)] = r;
  {  // eagerly first: op scratch and cuBLASLt plans reach their sizes outside the capture
    const vt::Tensor hidden = model_.forward_prepared(stream_, in, cache_);
    model_.compute_logits(stream_, hidden, rows);
    stream_.synchronize();
  }
  auto g = std::make_unique<Graph>();
  g->size = size;
  stream_.begin_capture();
  try {
    const vt::Tensor hidden = model_.forward_prepared(stream_, in, cache_);
    g->logits = model_.compute_logits(stream_, hidden, rows);
    g->exec = stream_.end_capture();
    g->kernel_nodes = vt::Stream::graph_kernel_nodes(*g->exec);
  } catch (...) {
    stream_.abort_capture();
    throw;
  }
  graphs_.push_back(std::move(g));
  return *graphs_.back();
}

bool DecodeGraphs::prepare_graph(const StepPlan& p) {
  if (opts_.padded_eager) return true;
  const int32_t size = graph_size_for(sizes_, p.num_requests());
  try {
    graph_for(size);  // before this step's inputs land in the buffer
    return true;
  } catch (const std::exception& e) {  // run eagerly from now on rather than fail the step
    std::fprintf(stderr,
                 "vtllm: CUDA graph capture of a %d-request decode step failed (%s); "
                 "running eagerly\n",
                 size, e.what());
    enabled_ = false;
    return false;
  }
}

vt::Tensor DecodeGraphs::replay(const StepPlan& p) {
  const int32_t size = graph_size_for(sizes_, p.num_requests());
  const models::StepLayout layout = layout_for(size);
  vt::Tensor logits;
  if (opts_.padded_eager) {  // tests: the same inputs, run eagerly
    ensure_input_buffer();
    const models::BatchInputs in = model_.prepare(stream_, p, cache_, &layout, &inputs_);
    std::vector<int32_t> rows(static_cast<size_t>(size));
    for (int32_t r = 0; r < size; ++r) rows[size_t(r)] = r;
    logits = model_.compute_logits(stream_, model_.forward_prepared(stream_, in, cache_), rows);
  } else {
    Graph& g = graph_for(size);
    model_.prepare(stream_, p, cache_, &layout, &inputs_);  // the one packed copy
    stream_.replay(*g.exec);
    logits = g.logits;
  }
  const auto& want = p.logits_indices;
  bool prefix = true;
  for (size_t i = 0; prefix && i < want.size(); ++i) prefix = want[i] == int32_t(i);
  if (prefix) return logits.slice(0, 0, int64_t(want.size()));
  vt::Tensor picked = vt::Tensor::empty({int64_t(want.size()), logits.size(1)}, logits.dtype(),
                                        logits.device());
  vt::embedding(stream_, logits, models::index_tensor(want), picked);  // a row gather
  return picked;
}

}  // namespace vtllm::engine
