// ModelRunner: the ModelExecutor over a real models::Model on its paged cache.
//
// It owns the model, the stream it runs on and the cache tensors (a
// models::ModelCache of kv.num_blocks x kv.block_size KV slots per attention
// layer and kv.num_state_slots + kv.num_state_snapshots GDN state slots per
// GDN layer), copies the engine's ForwardBatch into the model's (the fields
// match one for one), makes the batch's GDN state copies around forward()
// and returns the f32 logits of the wanted rows. It decides no
// policy and knows no model by name. Not thread-safe: the engine thread owns it.
#pragma once

#include <memory>
#include <string>

#include "engine/kv_cache_manager.h"
#include "engine/model_executor.h"
#include "models/model.h"
#include "vt/stream.h"

namespace vtllm::engine {

class ModelRunner final : public ModelExecutor {
 public:
  // Throws when the model has GDN layers and kv has no state slots.
  ModelRunner(std::unique_ptr<vt::Stream> stream, std::unique_ptr<models::Model> model,
              const KvCacheConfig& kv);
  ~ModelRunner() override;

  // Loads DIR (config.json + safetensors) on the CPU.
  static std::unique_ptr<ModelRunner> load(const std::string& dir, const KvCacheConfig& kv);

  int64_t vocab_size() const override;
  std::vector<float> execute(const ForwardBatch& batch) override;
  const models::Model& model() const { return *model_; }

 private:
  void copy_states(const std::vector<StateCopy>& copies);

  std::unique_ptr<vt::Stream> stream_;
  std::unique_ptr<models::Model> model_;
  std::unique_ptr<models::ModelCache> cache_;
  bool needs_state_slots_;
};

// True when any layer of the model keeps GDN state (a hybrid model).
bool needs_state_slots(const models::Model& model);

}  // namespace vtllm::engine
