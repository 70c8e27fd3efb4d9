// The two halves of a decoder layer, as interfaces an architecture file wires
// together (models/layers/decoder.h runs them).
//
// A Mixer mixes tokens: full attention over the paged KV cache (attention.h) or a
// Gated DeltaNet over its state slots (gdn.h). It reads x [T, hidden], writes out
// [T, hidden] (both in the activation dtype, out not overlapping x) and keeps what it
// needs between steps in the CacheView's entry for its layer index, whose kind and
// dimensions cache_spec() states. A FeedForward maps x [T, hidden] to out [T, hidden]
// token by token (the dense SwiGLU MLP, later the sparse MoE block).
// Implementations hold only weights; forward is const and not thread-safe on a stream.
#pragma once

#include <cstdint>

#include "models/cache.h"
#include "models/layers/batch_inputs.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vtllm::models {

class Mixer {
 public:
  virtual ~Mixer() = default;
  virtual void forward(vt::Stream& s, const vt::Tensor& x, const BatchInputs& in,
                       CacheView& cache, int64_t layer, vt::Tensor& out) const = 0;
  virtual LayerCacheSpec cache_spec() const = 0;
};

class FeedForward {
 public:
  virtual ~FeedForward() = default;
  virtual void forward(vt::Stream& s, const vt::Tensor& x, vt::Tensor& out) const = 0;
};

}  // namespace vtllm::models
