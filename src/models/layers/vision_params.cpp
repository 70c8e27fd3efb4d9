#include "models/layers/vision_params.h"

#include "base/error.h"

namespace vtllm::models {

VisionTowerParams take_vision_tower_params(ParamSink& w, const std::string& p,
                                           const io::VisionConfig& v) {
  const int64_t h = v.hidden_size, merged = h * v.spatial_merge_size * v.spatial_merge_size;
  auto linear = [&](const std::string& name, int64_t in, int64_t out) {
    return VisionLinear{w.take(name + ".weight", {out, in}), w.take(name + ".bias", {out})};
  };
  auto layer_norm = [&](const std::string& name, int64_t n) {
    return VisionLayerNorm{w.take(name + ".weight", {n}), w.take(name + ".bias", {n})};
  };
  VisionTowerParams t;
  const int64_t patch_dim = v.in_channels * v.temporal_patch_size * v.patch_size * v.patch_size;
  t.patch_weight = w.take(p + "patch_embed.proj.weight",
                          {h, v.in_channels, v.temporal_patch_size, v.patch_size, v.patch_size});
  if (!w.declaring()) t.patch_weight = t.patch_weight.view({h, patch_dim});
  t.patch_bias = w.take(p + "patch_embed.proj.bias", {h});
  t.pos_embed = w.take(p + "pos_embed.weight", {v.num_position_embeddings, h});
  for (int64_t b = 0; b < v.depth; ++b) {
    const std::string bp = str_cat(p, "blocks.", b, ".");
    VisionBlockParams blk;
    blk.norm1 = layer_norm(bp + "norm1", h);
    blk.norm2 = layer_norm(bp + "norm2", h);
    blk.qkv = linear(bp + "attn.qkv", h, 3 * h);
    blk.proj = linear(bp + "attn.proj", h, h);
    blk.fc1 = linear(bp + "mlp.linear_fc1", h, v.intermediate_size);
    blk.fc2 = linear(bp + "mlp.linear_fc2", v.intermediate_size, h);
    t.blocks.push_back(std::move(blk));
  }
  t.merger_norm = layer_norm(p + "merger.norm", h);
  t.merger_fc1 = linear(p + "merger.linear_fc1", merged, merged);
  t.merger_fc2 = linear(p + "merger.linear_fc2", merged, v.out_hidden_size);
  return t;
}

}  // namespace vtllm::models
