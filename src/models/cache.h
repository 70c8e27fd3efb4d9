// What a model keeps between steps, and how a layer finds it.
//
// CacheSpec lists, per layer, the kind and dimensions of its cache (the engine sizes
// its pools from it). CacheView is what forward() is handed: attention layer i gets
// its paged K/V tensors [num_blocks, block_size, Hkv, D] (written through
// slot_mapping, read through block_table: vt/ops/attention.h); GDN layer i gets its
// conv state [slots, K-1, conv_dim] and recurrent state [slots, Hv, Dk, Dv], both f32
// and indexed by state slot (vt/ops/gdn.h). All of them live on the model's device,
// the KV tensors in the model's dtype (Model::dtype()). ModelCache owns such tensors
// for every layer, zero-initialised; the engine may provide its own CacheView instead.
#pragma once

#include <cstdint>
#include <vector>

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vtllm::models {

struct LayerCacheSpec {
  enum class Kind { kAttention, kGdn };
  Kind kind = Kind::kAttention;
  // kAttention
  int64_t kv_heads = 0, head_dim = 0;
  // kGdn
  int64_t conv_rows = 0, conv_dim = 0;  // K - 1, 2 key_dim + value_dim
  int64_t value_heads = 0, key_head_dim = 0, value_head_dim = 0;
};
using CacheSpec = std::vector<LayerCacheSpec>;  // one entry per decoder layer

struct AttentionCache {
  vt::Tensor k, v;  // [num_blocks, block_size, Hkv, D]
};
struct GdnState {
  vt::Tensor conv;       // [slots, K - 1, conv_dim] f32
  vt::Tensor recurrent;  // [slots, Hv, Dk, Dv] f32
};

class CacheView {
 public:
  virtual ~CacheView() = default;
  // Throws when `layer` is not of that kind.
  virtual AttentionCache attention(int64_t layer) = 0;
  virtual GdnState gdn(int64_t layer) = 0;
};

class ModelCache final : public CacheView {
 public:
  // num_blocks x block_size KV slots per attention layer (kv_dtype), num_state_slots
  // GDN state slots per GDN layer, all zeroed (on `s`) on the stream's device.
  ModelCache(vt::Stream& s, const CacheSpec& spec, int64_t num_blocks, int64_t block_size,
             int64_t num_state_slots, vt::DType kv_dtype);
  // The same on the CPU with an f32 KV cache (the CPU reference models).
  ModelCache(const CacheSpec& spec, int64_t num_blocks, int64_t block_size,
             int64_t num_state_slots);

  AttentionCache attention(int64_t layer) override;
  GdnState gdn(int64_t layer) override;
  int64_t block_size() const { return block_size_; }
  int64_t num_blocks() const { return num_blocks_; }

 private:
  struct Entry {
    LayerCacheSpec::Kind kind;
    AttentionCache attn;
    GdnState gdn;
  };
  std::vector<Entry> layers_;
  int64_t num_blocks_, block_size_;
};

}  // namespace vtllm::models
