// The parameters of the Qwen3.5 vision tower (qwen3_5.md §3.2, §12), taken from a sink
// under `prefix` ("model.visual."): patch embedding (Conv3d weight and bias), learned
// position embedding, `depth` pre-norm blocks (LayerNorm weights and biases, fused qkv,
// proj, fc1, fc2, each with a bias) and the patch merger, in transformers' state-dict
// order. On a declaring sink every tensor is undefined (the declaration `vtllm inspect`
// counts); otherwise they are the loaded weights, in the checkpoint's dtype.
#pragma once

#include <string>
#include <vector>

#include "io/config.h"
#include "models/params.h"

namespace vtllm::models {

struct VisionLinear {
  vt::Tensor weight, bias;  // [out, in], [out]
};
struct VisionLayerNorm {
  vt::Tensor weight, bias;  // [hidden] each
};
struct VisionBlockParams {
  VisionLayerNorm norm1, norm2;
  VisionLinear qkv, proj, fc1, fc2;  // qkv rows: q | k | v, each head-major
};
struct VisionTowerParams {
  // [hidden, in_channels * temporal_patch * patch^2]: the Conv3d weight seen as the
  // linear it is (kernel = stride), columns in (channel, t, y, x) order. Undefined
  // when declaring.
  vt::Tensor patch_weight, patch_bias;
  vt::Tensor pos_embed;  // [num_position_embeddings, hidden]
  std::vector<VisionBlockParams> blocks;
  VisionLayerNorm merger_norm;
  VisionLinear merger_fc1, merger_fc2;  // [m^2 hidden]^2, [out_hidden, m^2 hidden]
};

VisionTowerParams take_vision_tower_params(ParamSink& w, const std::string& prefix,
                                           const io::VisionConfig& v);

}  // namespace vtllm::models
