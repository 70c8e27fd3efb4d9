// MmEmbedder: the runner's side of the encoder cache (the scheduler's book is
// engine/encoder_cache.h): vision features by content hash, computed by the model's
// VisionTower, and the InputEmbeddings a step's placeholder rows take (qwen3_5.md §15.3).
// Not thread-safe: the engine thread owns it, as the model.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "engine/step_plan.h"
#include "models/model.h"
#include "vt/stream.h"

namespace vtllm::engine {

class MmEmbedder {
 public:
  // The tower must outlive the embedder.
  explicit MmEmbedder(models::VisionTower& tower) : tower_(tower) {}

  // Drops plan.encoder_frees, then encodes plan.encoder_inputs and any item of
  // plan.embeds whose features are missing (one tower call for all), and returns the
  // embeddings of plan.embeds: rows ascending, values [rows, out_hidden] in the tower's
  // dtype on s's device (empty rows when the plan has none). The values may be views of
  // cached features; keep them until the step's work on s is done.
  models::InputEmbeddings embed(vt::Stream& s, const StepPlan& plan);

  int64_t num_encoded() const { return num_encoded_; }  // items encoded so far
  size_t num_cached() const { return features_.size(); }
  bool cached(const BlockHash& h) const { return features_.contains(h); }

 private:
  models::VisionTower& tower_;
  std::unordered_map<BlockHash, vt::Tensor, BlockHashHasher> features_;  // [tokens, out_hidden]
  vt::Tensor pixels_;  // the last input (packed, or one item's own rows), alive while the
                       // stream may read it
  int64_t num_encoded_ = 0;
};

}  // namespace vtllm::engine
