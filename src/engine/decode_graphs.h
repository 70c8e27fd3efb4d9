// DecodeGraphs: CUDA graphs for decode-only steps (vLLM's cudagraph mode;
// --enforce-eager turns them off), owned by the ModelRunner.
//
// A decode-only step (every request one new token after a non-empty context) of B <=
// max_batch requests whose seq_lens are all <= max_context runs as the replay of a
// graph captured for the next capture size N >= B (graph_sizes()), padded with
// requests that read the null block, write no KV slot and keep GDN state in the scratch
// slot `pad_state_slot` (models/layers/batch_inputs.h StepLayout). The step's indices
// are copied into the graphs' fixed input buffer (one packed copy), the graph replays,
// and the logits rows come from its fixed output. Graphs are captured lazily, on the
// first step of each size (each capture runs the step once eagerly first, on padding
// only, to size op scratch and cuBLASLt plans). Graph activations live in the
// allocator's graph pool (vt/cuda/api.h), shared by all graphs. One DecodeGraphs per
// device at a time (its destructor returns the device's graph pool). Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/step_plan.h"
#include "models/cache.h"
#include "models/model.h"
#include "vt/stream.h"

namespace vtllm::engine {

struct GraphOptions {
  bool enforce_eager = false;
  int32_t max_batch = 64;       // the largest capture size (logits of N rows stay held)
  int64_t max_context = 16384;  // graphs' attention bound L (capped at the cache's slots)
  // Tests: run the graph path's padded inputs eagerly instead of replaying, to show
  // replay == eager bit for bit.
  bool padded_eager = false;
};
// The capture sizes up to max_batch: 1, 2, 4, 8, then every multiple of 8 to 32,
// then of 16 (vLLM's list), and max_batch itself.
std::vector<int32_t> graph_sizes(int32_t max_batch);
// The capture size for a decode batch of `batch` requests (0: none fits).
int32_t graph_size_for(const std::vector<int32_t>& sizes, int64_t batch);

class DecodeGraphs {
 public:
  // Graphs for `model` on the CUDA stream `s` over `cache` (num_blocks x block_size KV
  // slots; `pad_state_slot` a GDN slot no request uses, or -1 for a model without GDN
  // layers). options.max_context is capped at the cache's slots.
  DecodeGraphs(models::Model& model, vt::Stream& s, models::ModelCache& cache,
               const GraphOptions& options, int64_t num_blocks, int64_t block_size,
               int32_t pad_state_slot);
  ~DecodeGraphs();
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  // True while steps may replay graphs (false once a capture failed).
  bool enabled() const { return enabled_; }
  // Whether `plan` is a step for a graph (decode-only, fits a capture size and the
  // context bound).
  bool takes(const StepPlan& plan) const;
  // Runs a step takes() accepted: captures its size's graph when new (a capture that
  // fails is reported on stderr, turns graphs off and returns nullopt: run eagerly),
  // then `before()` (the step's state copies), the packed input copy and the replay.
  // Returns the logits of plan.logits_indices, [rows, vocab] on the device.
  template <class Before>
  std::optional<vt::Tensor> run(const StepPlan& plan, Before before) {
    if (!prepare_graph(plan)) return std::nullopt;
    before();
    return replay(plan);
  }

  size_t num_graphs() const { return graphs_.size(); }
  // Per captured graph (in capture order): its batch size and its kernel nodes, the
  // kernels one decode step of that size launches (vt::Stream::graph_kernel_nodes).
  struct GraphKernels {
    int32_t batch = 0;
    int64_t kernels = 0;
  };
  std::vector<GraphKernels> kernel_counts() const;

 private:
  struct Graph;
  bool prepare_graph(const StepPlan& plan);
  vt::Tensor replay(const StepPlan& plan);
  Graph& graph_for(int32_t size);
  models::StepLayout layout_for(int32_t size) const;
  void ensure_input_buffer();

  models::Model& model_;
  vt::Stream& stream_;
  models::ModelCache& cache_;
  GraphOptions opts_;
  int64_t block_size_;
  int32_t pad_state_slot_;
  bool enabled_ = false;
  std::vector<int32_t> sizes_;
  vt::Tensor inputs_;  // the packed-input buffer every graph reads (fixed address)
  std::vector<std::unique_ptr<Graph>> graphs_;
};

}  // namespace vtllm::engine
