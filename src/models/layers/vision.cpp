#include "models/layers/vision.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "vt/ops/activation.h"
#include "vt/ops/copy.h"
#include "vt/ops/gemm.h"
#include "vt/ops/rope.h"
#include "vt/profile.h"

namespace vtllm::models {

namespace {

constexpr float kLayerNormEps = 1e-6f;  // every LayerNorm of the tower (qwen3_5.md §5.4)

// Calls fn(row, col) for every patch in the processor's order.
template <class F>
void for_each_patch(const std::vector<VisionGrid>& grids, int64_t merge, F&& fn) {
  for (const VisionGrid& g : grids)
    for (int64_t t = 0; t < g.t; ++t)
      for (int64_t by = 0; by < g.h / merge; ++by)
        for (int64_t bx = 0; bx < g.w / merge; ++bx)
          for (int64_t iy = 0; iy < merge; ++iy)
            for (int64_t ix = 0; ix < merge; ++ix) fn(g, by * merge + iy, bx * merge + ix);
}

vt::Tensor host_tensor(const std::vector<int32_t>& v, const vt::Shape& shape) {
  vt::Tensor t = vt::Tensor::empty(shape, vt::DType::kI32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

vt::Tensor host_tensor(const std::vector<float>& v, const vt::Shape& shape) {
  vt::Tensor t = vt::Tensor::empty(shape, vt::DType::kF32);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

void linear(vt::Stream& s, const vt::Tensor& x, const VisionLinear& l, vt::Tensor& out) {
  vt::linear(s, x, l.weight, out, l.bias);
}

// h += r, then out = LN(h) with n's parameters.
void add_layer_norm(vt::Stream& s, vt::Tensor& h, const vt::Tensor& r, const VisionLayerNorm& n,
                    vt::Tensor& out) {
  vt::add_layer_norm(s, h, r, n.weight, n.bias, kLayerNormEps, out);
}

// The f32 rotation rounded once to dt, in place (§12.3).
void rope_2d(vt::Stream& s, vt::Tensor x, const vt::Tensor& cos_sin) {
  vt::rope_neox(s, x, cos_sin, x, vt::RopeMath::kF32);
}

class VisionLanguageModel final : public Model {
 public:
  VisionLanguageModel(std::unique_ptr<Model> lm, std::unique_ptr<VisionTower> tower)
      : lm_(std::move(lm)), tower_(std::move(tower)) {}

  const io::ModelConfig& config() const override { return lm_->config(); }
  const CacheSpec& cache_spec() const override { return lm_->cache_spec(); }
  vt::Device device() const override { return lm_->device(); }
  vt::DType dtype() const override { return lm_->dtype(); }
  VisionTower* vision_tower() override { return tower_.get(); }
  vt::Tensor forward(vt::Stream& s, const ForwardBatch& batch, CacheView& cache,
                     const InputEmbeddings* embeds) override {
    return lm_->forward(s, batch, cache, embeds);
  }
  vt::Tensor compute_logits(vt::Stream& s, const vt::Tensor& hidden,
                            const std::vector<int32_t>& rows) override {
    return lm_->compute_logits(s, hidden, rows);
  }
  BatchInputs prepare(vt::Stream& s, const ForwardBatch& batch, CacheView& cache,
                      const StepLayout* layout, const vt::Tensor* into) override {
    return lm_->prepare(s, batch, cache, layout, into);
  }
  vt::Tensor forward_prepared(vt::Stream& s, const BatchInputs& in, CacheView& cache,
                              const InputEmbeddings* embeds) override {
    return lm_->forward_prepared(s, in, cache, embeds);
  }
  int64_t packed_input_bytes(const StepLayout& layout) const override {
    return lm_->packed_input_bytes(layout);
  }

 private:
  std::unique_ptr<Model> lm_;
  std::unique_ptr<VisionTower> tower_;
};

}  // namespace

PosEmbedTaps vision_pos_embed_taps(const std::vector<VisionGrid>& grids, int64_t side,
                                   int64_t merge) {
  PosEmbedTaps taps;
  int64_t patches = 0;
  for (const VisionGrid& g : grids) patches += g.t * g.h * g.w;
  taps.idx.reserve(size_t(4 * patches));
  taps.weight.reserve(size_t(4 * patches));
  const float last = float(side - 1);
  for_each_patch(grids, merge, [&](const VisionGrid& g, int64_t r, int64_t c) {
    // align_corners: patch r of h maps to r * (side - 1) / (h - 1) on the grid, in f32.
    const float sr = float(r) * last / float(std::max<int64_t>(g.h - 1, 1));
    const float sc = float(c) * last / float(std::max<int64_t>(g.w - 1, 1));
    const int64_t r0 = int64_t(sr), c0 = int64_t(sc);
    const int64_t r1 = std::min(r0 + 1, side - 1), c1 = std::min(c0 + 1, side - 1);
    const float dr = sr - float(r0), dc = sc - float(c0);  // exact: fractional parts
    const int64_t rows[4] = {r0, r0, r1, r1}, cols[4] = {c0, c1, c0, c1};
    const float w[4] = {(1.0f - dr) * (1.0f - dc), (1.0f - dr) * dc, dr * (1.0f - dc), dr * dc};
    for (int k = 0; k < 4; ++k) {
      taps.idx.push_back(int32_t(rows[k] * side + cols[k]));
      taps.weight.push_back(w[k]);
    }
  });
  return taps;
}

std::vector<float> vision_rotary_inv_freq(int64_t head_dim) {
  // transformers: 1 / theta ** (arange(0, dim, 2, f32) / dim), dim = head_dim / 2, in f32.
  const int64_t dim = head_dim / 2;
  std::vector<float> inv;
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float e = float(2 * i) / float(dim);
    inv.push_back(1.0f / std::pow(10000.0f, e));
  }
  return inv;
}

vt::Tensor vision_rotary_table(const std::vector<VisionGrid>& grids, int64_t head_dim,
                               int64_t merge) {
  const std::vector<float> inv = vision_rotary_inv_freq(head_dim);
  const size_t n = inv.size();
  // cos and sin of f32(p * inv_freq[i]) for every row or column index p, computed once:
  // a row and a column with the same index share the angle.
  int64_t side = 0, patches = 0;
  for (const VisionGrid& g : grids) {
    side = std::max({side, g.h, g.w});
    patches += g.t * g.h * g.w;
  }
  std::vector<float> cos_p(size_t(side) * n), sin_p(size_t(side) * n);
  for (int64_t p = 0; p < side; ++p)
    for (size_t i = 0; i < n; ++i) {
      const float a = float(p) * inv[i];
      cos_p[size_t(p) * n + i] = float(std::cos(double(a)));
      sin_p[size_t(p) * n + i] = float(std::sin(double(a)));
    }
  vt::Tensor table = vt::Tensor::empty({patches, head_dim}, vt::DType::kF32);
  float* row = table.data<float>();
  for_each_patch(grids, merge, [&](const VisionGrid&, int64_t r, int64_t c) {
    const size_t ri = size_t(r) * n, ci = size_t(c) * n;
    std::copy_n(cos_p.begin() + ri, n, row);
    std::copy_n(cos_p.begin() + ci, n, row + n);
    std::copy_n(sin_p.begin() + ri, n, row + 2 * n);
    std::copy_n(sin_p.begin() + ci, n, row + 3 * n);
    row += head_dim;
  });
  return table;
}

std::vector<int32_t> vision_cu_seqlens(const std::vector<VisionGrid>& grids) {
  std::vector<int32_t> cu = {0};
  for (const VisionGrid& g : grids)
    for (int64_t t = 0; t < g.t; ++t) cu.push_back(int32_t(cu.back() + g.h * g.w));
  return cu;
}

Qwen3_5VisionTower::Qwen3_5VisionTower(const io::VisionConfig& config, ParamSink& w,
                                       const std::string& prefix, vt::DType dtype)
    : config_(config),
      params_(take_vision_tower_params(w, prefix, config)),
      device_(w.device()),
      dtype_(dtype) {
  const io::VisionConfig& v = config_;
  VT_CHECK(v.num_heads > 0 && v.hidden_size % v.num_heads == 0, "vision_config: hidden_size ",
           v.hidden_size, " is not a multiple of num_heads ", v.num_heads);
  head_dim_ = v.hidden_size / v.num_heads;
  VT_CHECK(head_dim_ % 4 == 0, "vision_config: head dim ", head_dim_,
           " is not a multiple of 4 (the 2-D rotary splits it in quarters)");
  side_ = int64_t(std::sqrt(double(v.num_position_embeddings)));
  while (side_ * side_ > v.num_position_embeddings) --side_;
  while ((side_ + 1) * (side_ + 1) <= v.num_position_embeddings) ++side_;
  VT_CHECK(side_ * side_ == v.num_position_embeddings && side_ > 0,
           "vision_config: num_position_embeddings ", v.num_position_embeddings,
           " is not a perfect square");
  VT_CHECK(v.spatial_merge_size > 0, "vision_config: spatial_merge_size ", v.spatial_merge_size);
  if (v.hidden_act == "gelu_pytorch_tanh")
    block_act_ = vt::GeluKind::kTanh;
  else if (v.hidden_act == "gelu")
    block_act_ = vt::GeluKind::kErf;
  else
    VT_THROW("vision_config: hidden_act '", v.hidden_act,
             "' is not supported (gelu_pytorch_tanh, gelu)");
  patch_dim_ = v.in_channels * v.temporal_patch_size * v.patch_size * v.patch_size;
}

void Qwen3_5VisionTower::block(vt::Stream& s, const VisionBlockParams& b,
                               const VisionLayerNorm& next, const vt::Tensor& cos_sin,
                               const vt::Tensor& cu_seqlens, vt::Tensor& h, vt::Tensor& u) const {
  const int64_t n = h.size(0), hidden = config_.hidden_size, heads = config_.num_heads;
  vt::Tensor qkv = vt::Tensor::empty({n, 3 * hidden}, dtype_, device_);
  linear(s, u, b.qkv, qkv);
  auto part = [&](int64_t i) {
    return qkv.slice(1, i * hidden, (i + 1) * hidden).reshape({n, heads, head_dim_});
  };
  vt::Tensor q = part(0), k = part(1), v = part(2);
  // q and k are adjacent in qkv: one rotation over their 2 * heads heads.
  rope_2d(s, qkv.slice(1, 0, 2 * hidden).reshape({n, 2 * heads, head_dim_}), cos_sin);
  vt::Tensor o = vt::Tensor::empty({n, heads, head_dim_}, dtype_, device_);
  vt::segment_attention(s, q, k, v, cu_seqlens, 1.0f / std::sqrt(float(head_dim_)), o);
  vt::Tensor r = vt::Tensor::empty({n, hidden}, dtype_, device_);
  linear(s, o.view({n, hidden}), b.proj, r);
  add_layer_norm(s, h, r, b.norm2, u);
  vt::Tensor f = vt::Tensor::empty({n, config_.intermediate_size}, dtype_, device_);
  vt::linear_gelu(s, u, b.fc1.weight, b.fc1.bias, block_act_, f);
  linear(s, f, b.fc2, r);
  add_layer_norm(s, h, r, next, u);
}

vt::Tensor Qwen3_5VisionTower::encode(vt::Stream& s, const vt::Tensor& pixel_values,
                                      const std::vector<VisionGrid>& grids) {
  vt::RegionScope region(s, "vision");  // a profiled step's tower ops (vt/profile.h)
  const io::VisionConfig& v = config_;
  const int64_t m = v.spatial_merge_size;
  VT_CHECK(s.device() == device_, "vision tower: a stream on ", s.device().str(),
           " for a tower on ", device_.str());
  VT_CHECK(!grids.empty(), "vision tower: no grids to encode");
  int64_t n = 0;
  for (size_t i = 0; i < grids.size(); ++i) {
    const VisionGrid& g = grids[i];
    VT_CHECK(g.t > 0 && g.h > 0 && g.w > 0 && g.h % m == 0 && g.w % m == 0, "vision tower: grid ",
             i, " (", g.t, ", ", g.h, ", ", g.w, ") needs positive t and h, w multiples of ", m);
    n += g.t * g.h * g.w;
  }
  VT_CHECK(pixel_values.defined() && pixel_values.dim() == 2 &&
               pixel_values.dtype() == vt::DType::kF32 && pixel_values.size(1) == patch_dim_,
           "vision tower: pixel_values ", pixel_values.str(), " must be f32 [patches, ", patch_dim_,
           "]");
  VT_CHECK(pixel_values.size(0) == n, "vision tower: pixel_values has ", pixel_values.size(0),
           " rows, the grids ", n, " patches");

  // Host tables of this call, uploaded once.
  const PosEmbedTaps taps = vision_pos_embed_taps(grids, side_, m);
  const vt::Tensor idx = vt::to_device(s, host_tensor(taps.idx, {n, 4}), device_);
  const vt::Tensor weight = vt::to_device(s, host_tensor(taps.weight, {n, 4}), device_);
  const vt::Tensor cos_sin = vt::to_device(s, vision_rotary_table(grids, head_dim_, m), device_);
  const std::vector<int32_t> cu = vision_cu_seqlens(grids);
  const vt::Tensor cu_seqlens = host_tensor(cu, {int64_t(cu.size())});

  // Patch embedding on the pixels rounded to dt, plus the interpolated position embedding.
  vt::Tensor pixels = pixel_values;
  if (pixels.device() != device_) {
    if (!pixels.is_contiguous()) {
      vt::Stream host;  // a strided host tensor is packed on the host first
      pixels = vt::contiguous(host, pixels);
    }
    pixels = vt::to_device(s, pixels, device_);
  }
  const vt::Tensor x = vt::to_dtype(s, pixels, dtype_);
  vt::Tensor h = vt::Tensor::empty({n, v.hidden_size}, dtype_, device_);
  vt::linear(s, x, params_.patch_weight, h, params_.patch_bias);
  vt::Tensor pos = vt::Tensor::empty({n, v.hidden_size}, dtype_, device_);
  vt::weighted_gather(s, params_.pos_embed, idx, weight, pos);
  // u: the LayerNorm of h that the next block (or the merger) starts from.
  const std::vector<VisionBlockParams>& blocks = params_.blocks;
  vt::Tensor u = vt::Tensor::empty({n, v.hidden_size}, dtype_, device_);
  add_layer_norm(s, h, pos, blocks.empty() ? params_.merger_norm : blocks[0].norm1, u);
  for (size_t i = 0; i < blocks.size(); ++i)
    block(s, blocks[i], i + 1 < blocks.size() ? blocks[i + 1].norm1 : params_.merger_norm, cos_sin,
          cu_seqlens, h, u);

  // Merger: merge^2 consecutive normalised patches as one row, exact-erf GELU.
  const int64_t rows = n / (m * m), wide = v.hidden_size * m * m;
  vt::Tensor f = vt::Tensor::empty({rows, wide}, dtype_, device_);
  vt::linear_gelu(s, u.view({rows, wide}), params_.merger_fc1.weight, params_.merger_fc1.bias,
                  vt::GeluKind::kErf, f);
  vt::Tensor out = vt::Tensor::empty({rows, v.out_hidden_size}, dtype_, device_);
  linear(s, f, params_.merger_fc2, out);
  return out;
}

std::unique_ptr<Model> with_vision_tower(std::unique_ptr<Model> language_model,
                                         std::unique_ptr<VisionTower> tower) {
  VT_CHECK(language_model && tower, "with_vision_tower: a null model or tower");
  return std::make_unique<VisionLanguageModel>(std::move(language_model), std::move(tower));
}

}  // namespace vtllm::models
