// The Qwen3.5 vision tower (qwen3_5.md §12) composed from vt ops, and the wrapper that
// gives a language model its tower (Model::vision_tower()).
//
// Qwen3_5VisionTower::encode runs, in the model's activation dtype dt on its device
// (f32 on the CPU, bf16 on CUDA; every op computes in f32 and rounds once to dt):
//   X = R(pixel_values);  H = R(X . Wpe^T + b) + P                     (§12.1, §12.2)
//   P = weighted_gather(pos_embed, bilinear taps of each item's grid)  (host-built taps)
//   per block: u = LN1(H); qkv = R(u . Wqkv^T + b); q, k = R(rope2d(q, k) in f32)
//              H += R(segment_attention(q, k, v) . Wproj^T + b)         (§12.3, §12.4)
//              H += fc2(R(gelu_tanh(u . Wfc1^T + b))) with u = LN2(H)
//   merger:    out = fc2(R(gelu_erf(LN(H) grouped by merge^2 rows . Wfc1^T + b)))  (§12.5)
// Each fc1's GELU runs on its f32 sum (vt::linear_gelu: one rounding where the oracle
// rounds the product first), each residual add with the LayerNorm after it
// (vt::add_layer_norm, bit-equal to the two ops).
// Attention segments are one temporal index of one item (h*w patches each).
// Any depth, width, head count (head_dim a multiple of 4), patch, merge size, and
// num_position_embeddings (a perfect square) work.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "io/config.h"
#include "models/layers/vision_params.h"
#include "models/model.h"
#include "vt/ops/encoder.h"

namespace vtllm::models {

class Qwen3_5VisionTower final : public VisionTower {
 public:
  // Takes the tower's parameters under `prefix` from `w` (models/layers/vision_params.h);
  // computes in `dtype` on w's device. Throws naming the field for a config it cannot
  // run (head_dim not a multiple of 4, a non-square position grid, an unknown act).
  Qwen3_5VisionTower(const io::VisionConfig& config, ParamSink& w, const std::string& prefix,
                     vt::DType dtype);

  int64_t patch_dim() const override { return patch_dim_; }
  int64_t merge_size() const override { return config_.spatial_merge_size; }
  int64_t out_hidden() const override { return config_.out_hidden_size; }
  vt::Tensor encode(vt::Stream& s, const vt::Tensor& pixel_values,
                    const std::vector<VisionGrid>& grids) override;

 private:
  // One block on h [N, hidden], u = LN1(h) on entry; on return u = next(h), the
  // LayerNorm after the block (the next block's LN1 or the merger's).
  void block(vt::Stream& s, const VisionBlockParams& b, const VisionLayerNorm& next,
             const vt::Tensor& cos_sin, const vt::Tensor& cu_seqlens, vt::Tensor& h,
             vt::Tensor& u) const;

  io::VisionConfig config_;
  VisionTowerParams params_;
  vt::Device device_;
  vt::DType dtype_;
  vt::GeluKind block_act_;
  int64_t patch_dim_, head_dim_, side_;
};

// The host tables encode() builds per call, exposed for tests. Rows follow the
// processor's patch order: per item, per temporal index, 2-D blocks of merge x merge
// patches in raster order, raster order inside a block.

// Bilinear taps of the learned side x side position grid (§12.2, align_corners): idx and
// weight [N, 4] row-major, taps (r0,c0) (r0,c1) (r1,c0) (r1,c1), weights in f32.
struct PosEmbedTaps {
  std::vector<int32_t> idx;
  std::vector<float> weight;
};
PosEmbedTaps vision_pos_embed_taps(const std::vector<VisionGrid>& grids, int64_t side,
                                   int64_t merge);
// The axial rotary frequencies (§12.3): head_dim / 4 values 1 / 10000^(f32(2i / (head_dim/2))).
std::vector<float> vision_rotary_inv_freq(int64_t head_dim);
// The rope_neox table, a host f32 tensor [N, head_dim]: cos of [theta_h (head_dim/4) |
// theta_w (head_dim/4)], then the sines, theta = f32(row or col * inv_freq).
vt::Tensor vision_rotary_table(const std::vector<VisionGrid>& grids, int64_t head_dim,
                               int64_t merge);
// Segment bounds for segment_attention: one segment of h*w patches per temporal index.
std::vector<int32_t> vision_cu_seqlens(const std::vector<VisionGrid>& grids);

// `language_model` with `tower` as its vision_tower(); every other call goes to the
// language model. Both must live on one device.
std::unique_ptr<Model> with_vision_tower(std::unique_ptr<Model> language_model,
                                         std::unique_ptr<VisionTower> tower);

}  // namespace vtllm::models
