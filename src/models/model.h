// Model: the forward contract every architecture implements (DESIGN §5).
//
// A Model lives on one device and computes in one activation dtype (dtype(): the
// residual stream, projections, attention, KV cache and logits; DESIGN §9): f32 on
// the CPU (the reference, held to the f32 oracle), bf16 on CUDA (held to the bf16
// oracle, rounding where it rounds). Norms, softmax, GDN state and the attention
// preamble compute in f32 inside the ops whatever the dtype; GDN state is f32.
//
// forward() runs all T tokens of a ForwardBatch through the decoder on a stream of the
// model's device (token t's input is the embedding of token_ids[t], or the row given in
// InputEmbeddings: how a vision tower's features enter), writing each attention layer's K/V and each GDN layer's state into
// the CacheView (tensors on the model's device; KV in dtype()), and returns the
// final-normed hidden state [T, hidden] in dtype() on the device. compute_logits()
// projects chosen rows of it through lm_head: [rows.size(), vocab] in dtype() on the
// device (bf16 logits on CUDA, as the oracle's). The ForwardBatch's index arrays are
// uploaded to the device once per forward. A Model holds only weights: one Model
// serves any number of sequences, whose state lives in the cache. Not thread-safe:
// one forward at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "io/config.h"
#include "io/weight_loader.h"
#include "models/cache.h"
#include "models/forward_batch.h"
#include "models/layers/batch_inputs.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vtllm::models {

// How a model is built, beyond its config. Defaults are the production choices.
struct ModelOptions {
  // Full-attention preamble through the fused AttnQkNormRopeGate op (true) or through
  // separate norm / 1-D rotary / sigmoid ops (false, debugging; refuses MRoPE positions).
  bool fuse_attn_preamble = true;
  // A multimodal class builds no vision tower and loads none of its weights
  // (--language-model-only); vision_tower() is then null.
  bool language_model_only = false;

  // The defaults with the environment's overrides: VTLLM_FUSE_ATTN_PREAMBLE=0 turns the
  // fused preamble off. The only place that variable is read.
  static ModelOptions from_env();
};

// Where a model is placed and where its weights come from (the registry's arguments
// beside the config).
struct LoadConfig {
  vt::Device device = vt::Device::cpu();  // weights and compute; the stream must be on it
  // The activation dtype; unset: default_dtype(device).
  std::optional<vt::DType> dtype;
  // kAuto: the safetensors checkpoint of the model directory; kDummy: deterministic
  // random weights of the config's shapes (config.json alone, for benchmarks).
  io::LoadFormat format = io::LoadFormat::kAuto;
  uint64_t dummy_seed = 0;
  io::LoadOptions::Progress progress = io::LoadOptions::Progress::kAuto;

  // f32 on the CPU, bf16 on CUDA (DESIGN §9).
  static vt::DType default_dtype(vt::Device device);
  vt::DType activation_dtype() const { return dtype.value_or(default_dtype(device)); }
};

// Input embeddings for given rows of a step's flat token axis: values[i] replaces the
// embedding of token rows[i] (rows ascending and distinct, within the step's T
// tokens). values: [rows.size(), hidden] in the model's dtype on its device; not
// copied (it must live until the forward's work is done on the stream).
struct InputEmbeddings {
  std::vector<int32_t> rows;
  vt::Tensor values;
};

// Writes `embeds` into the embedded tokens x [T, hidden] (one copy per run of
// consecutive rows); throws naming the problem when rows or values do not fit x.
void scatter_input_embeddings(vt::Stream& s, const InputEmbeddings& embeds, vt::Tensor& x);

// A vision item's patch grid (qwen3_5.md §12): t temporal patches of h x w patches
// (h, w multiples of the merge size). The tower reads t*h*w patch rows for it.
struct VisionGrid {
  int64_t t = 1, h = 0, w = 0;
};

// The vision tower of a multimodal model (qwen3_5.md §12).
// encode(): pixel_values [N, patch_dim] f32 (host or the model's device; N = the sum of
// t*h*w over `grids`, items packed in order, each in the processor's patch order) ->
// features [N / merge^2, out_hidden] in the model's dtype on its device, items
// concatenated in input order, each in the merger's order: the rows that replace the
// placeholder embeddings (§15.3). Throws naming the problem when the rows do not match
// the grids. Not thread-safe (one call at a time, as forward()).
class VisionTower {
 public:
  virtual ~VisionTower() = default;
  virtual int64_t patch_dim() const = 0;    // in_channels * temporal_patch * patch^2
  virtual int64_t merge_size() const = 0;   // spatial_merge_size
  virtual int64_t out_hidden() const = 0;   // == the language model's hidden size
  virtual vt::Tensor encode(vt::Stream& s, const vt::Tensor& pixel_values,
                            const std::vector<VisionGrid>& grids) = 0;
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const io::ModelConfig& config() const = 0;
  virtual const CacheSpec& cache_spec() const = 0;
  int64_t vocab_size() const { return config().text.vocab_size; }
  int64_t hidden_size() const { return config().text.hidden_size; }
  virtual vt::Device device() const = 0;
  // The activation dtype (see above); the KV cache a CacheView hands this model holds it.
  virtual vt::DType dtype() const = 0;
  // The vision tower; null for text-only models and under --language-model-only.
  virtual VisionTower* vision_tower() { return nullptr; }

  // `embeds` may be null (every token's input is its embedding).
  virtual vt::Tensor forward(vt::Stream& s, const ForwardBatch& batch, CacheView& cache,
                             const InputEmbeddings* embeds = nullptr) = 0;
  virtual vt::Tensor compute_logits(vt::Stream& s, const vt::Tensor& hidden,
                                    const std::vector<int32_t>& rows) = 0;

  // For runners that keep a step's inputs in fixed device buffers (CUDA graphs, the
  // engine's ModelRunner): prepare() validates the batch (against the cache's shapes
  // too) and packs its indices, padded to `layout` into `into` when given
  // (models/layers/batch_inputs.h); forward_prepared() runs forward() over them, issuing
  // no host-to-device copy, so it can be captured. forward(s, b, c) computes what
  // forward_prepared(s, prepare(s, b, c), c) does. packed_input_bytes() sizes `into`
  // for a layout (embeds as in forward). Models that do not implement them throw.
  virtual BatchInputs prepare(vt::Stream& s, const ForwardBatch& batch, CacheView& cache,
                              const StepLayout* layout = nullptr, const vt::Tensor* into = nullptr);
  virtual vt::Tensor forward_prepared(vt::Stream& s, const BatchInputs& in, CacheView& cache,
                                      const InputEmbeddings* embeds = nullptr);
  virtual int64_t packed_input_bytes(const StepLayout& layout) const;
};

}  // namespace vtllm::models
