// ModelRunner: the ModelExecutor over a real models::Model on its paged cache.
//
// It owns the model, the stream it runs on and the cache tensors (a
// models::ModelCache of kv.num_blocks x kv.block_size KV slots per attention
// layer and kv.num_state_slots + kv.num_state_snapshots GDN state slots per
// GDN layer, on the model's device, KV in the model's dtype), copies the
// engine's ForwardBatch into the model's (the fields match one for one), makes
// the batch's GDN state copies around forward() and returns the logits of the
// wanted rows as f32 on the host (bf16 on CUDA, widened exactly), or, through
// execute_greedy(), only their argmax computed on the device. It decides no
// policy and knows no model by name. Not thread-safe: the engine thread owns it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/cache_sizing.h"
#include "engine/kv_cache_manager.h"
#include "engine/model_executor.h"
#include "models/model.h"
#include "vt/stream.h"

namespace vtllm::engine {

// How a runner on a CUDA device sizes its cache (CPU runners take kv.num_blocks).
struct MemoryBudget {
  double gpu_memory_utilization = 0.9;
  // The largest step the scheduler may build: the profile forward runs
  // max_num_batched_tokens tokens spread over min(max_num_seqs, tokens) requests.
  int64_t max_num_batched_tokens = 2048;
  int32_t max_num_seqs = 256;
};

// CUDA graphs for decode-only steps (vLLM's cudagraph mode; enforce_eager turns
// them off). A decode-only step (every request one new token after a non-empty
// context) of B <= max_batch requests whose seq_lens are all <= max_context runs as
// the replay of a graph captured for the next capture size N >= B (graph_sizes()),
// padded with requests that read the null block, write no KV slot and keep GDN state
// in a scratch slot the runner reserves past the engine's (num_state_slots +
// num_state_snapshots). The step's indices are copied into the graphs' fixed input
// buffer (one packed copy), the graph replays, and the logits rows come from its
// fixed output. Graphs are captured lazily, on the first step of each size (each
// capture runs the step once eagerly first, on padding only, to size op scratch and
// cuBLASLt plans). Other steps (prefill, mixed, longer contexts) run eagerly.
// Graph activations live in the allocator's graph pool (vt/cuda/api.h), shared by
// all graphs; load_sized counts them in the cache plan. A capture that fails is
// reported on stderr and the runner runs eagerly from then on. One runner with graphs
// per device at a time (its destructor returns the device's graph pool).
// Not thread-safe, like the runner.
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

class ModelRunner final : public ModelExecutor {
 public:
  // Throws when the model has GDN layers and kv has no state slots. Graphs are used
  // on CUDA only, and only when `graphs` is given and not enforce_eager.
  ModelRunner(std::unique_ptr<vt::Stream> stream, std::unique_ptr<models::Model> model,
              const KvCacheConfig& kv, const std::optional<GraphOptions>& graphs = std::nullopt);
  ~ModelRunner() override;

  // Loads the model of `config` from DIR (safetensors, or dummy weights with
  // load.format == kDummy) on load.device with kv.num_blocks blocks.
  static std::unique_ptr<ModelRunner> load(const io::ModelConfig& config, const std::string& dir,
                                           const KvCacheConfig& kv,
                                           const models::LoadConfig& load = {},
                                           const std::optional<GraphOptions>& graphs = std::nullopt);
  // The same with DIR/config.json, on the CPU from safetensors.
  static std::unique_ptr<ModelRunner> load(const std::string& dir, const KvCacheConfig& kv);

  // On a CUDA device: loads the model, runs one profile forward of the budget's
  // largest step and sets kv.num_blocks from budget.gpu_memory_utilization
  // (CachePlan; the arithmetic is logged to stderr unless quiet). kv.num_blocks
  // is ignored; the engine must be built with kv_config(). On the CPU this is
  // load() with kv as given.
  static std::unique_ptr<ModelRunner> load_sized(const io::ModelConfig& config,
                                                 const std::string& dir, const KvCacheConfig& kv,
                                                 const models::LoadConfig& load,
                                                 const MemoryBudget& budget, bool quiet = false,
                                                 const std::optional<GraphOptions>& graphs =
                                                     std::nullopt);

  int64_t vocab_size() const override;
  std::vector<float> execute(const ForwardBatch& batch) override;
  // As execute(), but returns only the argmax token of each logits row (ties to
  // the lowest id, as the sampler's greedy path), computed on the model's device:
  // rows ints cross to the host instead of rows x vocab floats.
  std::vector<int32_t> execute_greedy(const ForwardBatch& batch);
  // On CUDA: the engine samples through this (vt::sample on the device; the logits
  // never cross to the host).
  bool samples_on_device() const override { return model_->device().is_cuda(); }
  vt::SampleOutput execute_sampled(const ForwardBatch& batch,
                                   const vt::SampleBatch& sampling) override;

  const models::Model& model() const { return *model_; }
  vt::Stream& stream() { return *stream_; }
  // The cache this runner holds (num_blocks includes the null block).
  const KvCacheConfig& kv_config() const { return kv_; }
  // How the cache was sized (load_sized on CUDA only).
  const std::optional<CachePlan>& cache_plan() const { return plan_; }
  // Graphs: whether steps may replay them, and how many were captured so far.
  bool uses_graphs() const { return graphs_enabled_; }
  size_t num_graphs() const { return graphs_.size(); }
  // Per captured graph (in capture order): its batch size and its kernel nodes, the
  // kernels one decode step of that size launches (vt::Stream::graph_kernel_nodes).
  struct GraphKernels {
    int32_t batch = 0;
    int64_t kernels = 0;
  };
  std::vector<GraphKernels> graph_kernel_counts() const;

 private:
  void copy_states(const std::vector<StateCopy>& copies);
  // forward() of the batch and the device logits of batch.logits_indices (undefined if none).
  vt::Tensor run(const ForwardBatch& batch);

  // The graph path of run() (nullopt: the step is not for a graph).
  std::optional<vt::Tensor> run_graph(const ForwardBatch& batch);
  struct DecodeGraph;
  DecodeGraph& graph_for(int32_t size);
  models::StepLayout layout_for(int32_t size) const;

  std::unique_ptr<vt::Stream> stream_;
  std::unique_ptr<models::Model> model_;
  std::unique_ptr<models::ModelCache> cache_;
  KvCacheConfig kv_;
  bool needs_state_slots_;
  std::optional<CachePlan> plan_;
  GraphOptions graph_opts_;
  bool graphs_enabled_ = false;
  std::vector<int32_t> sizes_;
  int32_t pad_state_slot_ = -1;
  vt::Tensor graph_inputs_;  // the packed-input buffer every graph reads (fixed address)
  std::vector<std::unique_ptr<DecodeGraph>> graphs_;
};

// True when any layer of the model keeps GDN state (a hybrid model).
bool needs_state_slots(const models::Model& model);

}  // namespace vtllm::engine
