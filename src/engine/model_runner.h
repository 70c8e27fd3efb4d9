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

class ModelRunner final : public ModelExecutor {
 public:
  // Throws when the model has GDN layers and kv has no state slots.
  ModelRunner(std::unique_ptr<vt::Stream> stream, std::unique_ptr<models::Model> model,
              const KvCacheConfig& kv);
  ~ModelRunner() override;

  // Loads the model of `config` from DIR (safetensors, or dummy weights with
  // load.format == kDummy) on load.device with kv.num_blocks blocks.
  static std::unique_ptr<ModelRunner> load(const io::ModelConfig& config, const std::string& dir,
                                           const KvCacheConfig& kv,
                                           const models::LoadConfig& load = {});
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
                                                 const MemoryBudget& budget, bool quiet = false);

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

 private:
  void copy_states(const std::vector<StateCopy>& copies);
  // forward() of the batch and the device logits of batch.logits_indices (undefined if none).
  vt::Tensor run(const ForwardBatch& batch);

  std::unique_ptr<vt::Stream> stream_;
  std::unique_ptr<models::Model> model_;
  std::unique_ptr<models::ModelCache> cache_;
  KvCacheConfig kv_;
  bool needs_state_slots_;
  std::optional<CachePlan> plan_;
};

// True when any layer of the model keeps GDN state (a hybrid model).
bool needs_state_slots(const models::Model& model);

}  // namespace vtllm::engine
