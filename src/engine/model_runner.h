// ModelRunner: the ModelExecutor over a real models::Model on its paged cache.
//
// It owns the model, the stream it runs on, the cache tensors (a models::ModelCache of
// kv.num_blocks x kv.block_size KV slots per attention layer and kv.num_state_slots +
// kv.num_state_snapshots GDN state slots per GDN layer, on the model's device, KV in
// the model's dtype) and, on CUDA, the decode graphs (engine/decode_graphs.h). A step
// hands the StepPlan to the model as its ForwardBatch, makes the plan's GDN state
// copies around the forward pass and samples the wanted rows where the logits are
// (vt::sample): on CUDA the logits never cross to the host, except the rows of prompt
// logprobs (plan.prompt_logprob_rows: their logits, widened to f32, come back for
// prompt_logprobs_from_logits; such a step runs without graphs). Multimodal steps
// encode their vision items first (MmEmbedder, the encoder cache) and hand the
// placeholder rows' features to forward() as InputEmbeddings, without graphs. It decides no policy
// and knows no model by name. Not thread-safe: the engine thread owns it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/cache_planner.h"
#include "engine/decode_graphs.h"
#include "engine/kv_cache_manager.h"
#include "engine/mm_embedder.h"
#include "engine/model_executor.h"
#include "models/model.h"
#include "vt/stream.h"

namespace vtllm::engine {

class ModelRunner final : public ModelExecutor {
 public:
  // Throws when the model has GDN layers and kv has no state slots. Graphs are used
  // on CUDA only, and only when `graphs` is given and not enforce_eager (one more GDN
  // slot is reserved past the engine's for their padding rows).
  ModelRunner(std::unique_ptr<vt::Stream> stream, std::unique_ptr<models::Model> model,
              const KvCacheConfig& kv, const std::optional<GraphOptions>& graphs = std::nullopt);
  ~ModelRunner() override;

  // Loads the model of `config` from DIR (safetensors, or dummy weights with
  // load.format == kDummy) on load.device with kv.num_blocks blocks, built with
  // `options` (options.language_model_only: no vision tower, its weights not read).
  static std::unique_ptr<ModelRunner> load(
      const io::ModelConfig& config, const std::string& dir, const KvCacheConfig& kv,
      const models::LoadConfig& load = {}, const std::optional<GraphOptions>& graphs = std::nullopt,
      const models::ModelOptions& options = models::ModelOptions::from_env());
  // The same with DIR/config.json, on the CPU from safetensors.
  static std::unique_ptr<ModelRunner> load(const std::string& dir, const KvCacheConfig& kv);

  // On a CUDA device: loads the model, measures its weights, and sets kv.num_blocks
  // from budget.gpu_memory_utilization (profile_and_plan; the plan is logged to stderr
  // unless quiet). kv.num_blocks is ignored; the engine must be built with
  // kv_config(). On the CPU this is load() with kv as given.
  static std::unique_ptr<ModelRunner> load_sized(const io::ModelConfig& config,
                                                 const std::string& dir, const KvCacheConfig& kv,
                                                 const models::LoadConfig& load,
                                                 const MemoryBudget& budget, bool quiet = false,
                                                 const std::optional<GraphOptions>& graphs =
                                                     std::nullopt,
                                                 const models::ModelOptions& options =
                                                     models::ModelOptions::from_env());

  int64_t vocab_size() const override;
  StepOutput execute(const StepPlan& plan, StepSampling& sampling) override;
  // Throws without a vision tower (a text-only model, --language-model-only) and under
  // the unfused attention preamble (VTLLM_FUSE_ATTN_PREAMBLE=0 takes no MRoPE positions).
  int64_t check_multimodal() const override;
  int64_t encoder_bytes_per_token() const override;
  // Vision items encoded so far (each once while its features stay cached).
  int64_t num_encoded_items() const { return embedder_ ? embedder_->num_encoded() : 0; }
  // The step's logits of plan.logits_indices as f32 on the host (bf16 on CUDA, widened
  // exactly), rows x vocab row-major: for tests and benchmarks.
  std::vector<float> execute_logits(const StepPlan& plan);
  // Only the argmax token of each logits row (ties to the lowest id), computed on the
  // model's device: rows ints cross to the host instead of rows x vocab floats.
  std::vector<int32_t> execute_greedy(const StepPlan& plan);

  const models::Model& model() const { return *model_; }
  vt::Stream& stream() { return *stream_; }
  // The cache this runner holds (num_blocks includes the null block).
  const KvCacheConfig& kv_config() const { return kv_; }
  // How the cache was sized (load_sized on CUDA only).
  const std::optional<CachePlan>& cache_plan() const { return plan_; }
  // Graphs: whether steps may replay them, and how many were captured so far.
  bool uses_graphs() const { return graphs_ && graphs_->enabled(); }
  size_t num_graphs() const { return graphs_ ? graphs_->num_graphs() : 0; }
  std::vector<DecodeGraphs::GraphKernels> graph_kernel_counts() const;

 private:
  void copy_states(const std::vector<StateCopy>& copies);
  // The forward pass of the plan and the device logits of plan.logits_indices
  // (undefined if none); with `prompt`, the prompt logprobs of plan.prompt_logprob_rows.
  vt::Tensor run(const StepPlan& plan, std::vector<SampleResult>* prompt = nullptr);

  std::unique_ptr<vt::Stream> stream_;
  std::unique_ptr<models::Model> model_;
  std::unique_ptr<models::ModelCache> cache_;
  KvCacheConfig kv_;
  std::optional<CachePlan> plan_;
  std::unique_ptr<DecodeGraphs> graphs_;
  std::unique_ptr<MmEmbedder> embedder_;  // models with a vision tower
  bool fused_preamble_ = true;            // ModelOptions::from_env(), as the model was built
  models::InputEmbeddings step_embeds_;   // the step's, alive until the next step
};

// True when any layer of the model keeps GDN state (a hybrid model).
bool needs_state_slots(const models::Model& model);

}  // namespace vtllm::engine
