#include "models/layers/vision_params.h"

#include "base/error.h"

namespace vtllm::models {

void take_vision_tower_params(ParamSink& w, const std::string& p, const io::VisionConfig& v) {
  const int64_t h = v.hidden_size, merged = h * v.spatial_merge_size * v.spatial_merge_size;
  auto linear = [&](const std::string& name, int64_t in, int64_t out) {
    w.take(name + ".weight", {out, in});
    w.take(name + ".bias", {out});
  };
  auto layer_norm = [&](const std::string& name, int64_t n) {
    w.take(name + ".weight", {n});
    w.take(name + ".bias", {n});
  };
  w.take(p + "patch_embed.proj.weight",
         {h, v.in_channels, v.temporal_patch_size, v.patch_size, v.patch_size});
  w.take(p + "patch_embed.proj.bias", {h});
  w.take(p + "pos_embed.weight", {v.num_position_embeddings, h});
  for (int64_t b = 0; b < v.depth; ++b) {
    const std::string bp = str_cat(p, "blocks.", b, ".");
    layer_norm(bp + "norm1", h);
    layer_norm(bp + "norm2", h);
    linear(bp + "attn.qkv", h, 3 * h);
    linear(bp + "attn.proj", h, h);
    linear(bp + "mlp.linear_fc1", h, v.intermediate_size);
    linear(bp + "mlp.linear_fc2", v.intermediate_size, h);
  }
  layer_norm(p + "merger.norm", h);
  linear(p + "merger.linear_fc1", merged, merged);
  linear(p + "merger.linear_fc2", merged, v.out_hidden_size);
}

}  // namespace vtllm::models
