#include "models/cache.h"

#include "base/error.h"
#include "vt/ops/fill.h"

namespace vtllm::models {

namespace {
vt::Tensor zeros(vt::Stream& s, const vt::Shape& shape, vt::DType dtype) {
  vt::Tensor t = vt::Tensor::empty(shape, dtype, s.device());
  vt::zero(s, t);
  return t;
}
}  // namespace

ModelCache::ModelCache(vt::Stream& s, const CacheSpec& spec, int64_t num_blocks,
                       int64_t block_size, int64_t num_state_slots, vt::DType kv_dtype)
    : num_blocks_(num_blocks), block_size_(block_size) {
  VT_CHECK(num_blocks > 0 && block_size > 0 && num_state_slots >= 0, "ModelCache: ", num_blocks,
           " blocks of ", block_size, " and ", num_state_slots, " state slots");
  for (const LayerCacheSpec& l : spec) {
    Entry e{l.kind, {}, {}};
    if (l.kind == LayerCacheSpec::Kind::kAttention) {
      e.attn.k = zeros(s, {num_blocks, block_size, l.kv_heads, l.head_dim}, kv_dtype);
      e.attn.v = zeros(s, {num_blocks, block_size, l.kv_heads, l.head_dim}, kv_dtype);
    } else {
      VT_CHECK(num_state_slots > 0, "ModelCache: the model has GDN layers but no state slots");
      e.gdn.conv = zeros(s, {num_state_slots, l.conv_rows, l.conv_dim}, vt::DType::kF32);
      e.gdn.recurrent = zeros(
          s, {num_state_slots, l.value_heads, l.key_head_dim, l.value_head_dim}, vt::DType::kF32);
    }
    layers_.push_back(std::move(e));
  }
}

namespace {
// A temporary stream lives to the end of the full expression: the delegated constructor.
vt::Stream& lvalue(vt::Stream&& s) { return s; }
}  // namespace

ModelCache::ModelCache(const CacheSpec& spec, int64_t num_blocks, int64_t block_size,
                       int64_t num_state_slots)
    : ModelCache(lvalue(vt::Stream(vt::Device::cpu(), 1)), spec, num_blocks, block_size,
                 num_state_slots, vt::DType::kF32) {}

AttentionCache ModelCache::attention(int64_t layer) {
  VT_CHECK(layer >= 0 && layer < int64_t(layers_.size()) &&
               layers_[size_t(layer)].kind == LayerCacheSpec::Kind::kAttention,
           "ModelCache: layer ", layer, " has no attention cache");
  return layers_[size_t(layer)].attn;
}

GdnState ModelCache::gdn(int64_t layer) {
  VT_CHECK(layer >= 0 && layer < int64_t(layers_.size()) &&
               layers_[size_t(layer)].kind == LayerCacheSpec::Kind::kGdn,
           "ModelCache: layer ", layer, " has no GDN state");
  return layers_[size_t(layer)].gdn;
}

}  // namespace vtllm::models
