// Model: the forward contract every architecture implements (DESIGN §5).
//
// forward() runs all T tokens of a ForwardBatch through the decoder, writing each
// attention layer's K/V and each GDN layer's state into the CacheView, and returns
// the final-normed hidden state [T, hidden] (f32 on the CPU). compute_logits() projects
// chosen rows of it through lm_head: [rows.size(), vocab] f32. A Model holds only
// weights: one Model serves any number of sequences, whose state lives in the cache.
// Not thread-safe: one forward at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "io/config.h"
#include "models/cache.h"
#include "models/forward_batch.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vtllm::models {

// How a model is built, beyond its config. Defaults are the production choices.
struct ModelOptions {
  // Full-attention preamble through the fused AttnQkNormRopeGate op (true) or through
  // separate norm / 1-D rotary / sigmoid ops (false, debugging; refuses MRoPE positions).
  bool fuse_attn_preamble = true;

  // The defaults with the environment's overrides: VT_FUSE_ATTN_PREAMBLE=0 turns the
  // fused preamble off. The only place that variable is read.
  static ModelOptions from_env();
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const io::ModelConfig& config() const = 0;
  virtual const CacheSpec& cache_spec() const = 0;
  int64_t vocab_size() const { return config().text.vocab_size; }
  int64_t hidden_size() const { return config().text.hidden_size; }

  virtual vt::Tensor forward(vt::Stream& s, const ForwardBatch& batch, CacheView& cache) = 0;
  virtual vt::Tensor compute_logits(vt::Stream& s, const vt::Tensor& hidden,
                                    const std::vector<int32_t>& rows) = 0;
};

}  // namespace vtllm::models
