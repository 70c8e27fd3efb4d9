#include "models/layers/decoder.h"

#include <string>

#include "base/error.h"
#include "io/weight_names.h"
#include "vt/ops/copy.h"
#include "vt/ops/embedding.h"
#include "vt/ops/gemm.h"
#include "vt/ops/rope.h"
#include "vt/profile.h"

namespace vtllm::models {

DecoderStack::DecoderStack(const io::ModelConfig& config, ParamSink& w,
                           vt::RmsNormKind norm_kind, std::optional<RopeSpec> rope)
    : prefix_(io::language_model_prefix(config)),
      hidden_(config.text.hidden_size),
      norm_kind_(norm_kind),
      rope_(std::move(rope)) {
  const io::TextConfig& t = config.text;
  embed_ = w.take(prefix_ + "embed_tokens.weight", {t.vocab_size, t.hidden_size});
  lm_head_ = config.tie_word_embeddings ? embed_
                                        : w.take("lm_head.weight", {t.vocab_size, t.hidden_size});
  norm_ = w.take(prefix_ + "norm.weight", {t.hidden_size});
}

std::string DecoderStack::layer_prefix(int64_t i) const {
  return prefix_ + "layers." + std::to_string(i) + ".";
}

void DecoderStack::add_layer(ParamSink& w, std::unique_ptr<Mixer> mixer,
                             std::unique_ptr<FeedForward> ffn) {
  VT_CHECK(mixer && ffn, "decoder: layer ", layers_.size(), " needs a mixer and a feed-forward");
  const std::string p = layer_prefix(int64_t(layers_.size()));
  Layer& l = layers_.emplace_back();
  l.input_norm = w.take(p + "input_layernorm.weight", {hidden_});
  l.post_norm = w.take(p + "post_attention_layernorm.weight", {hidden_});
  l.mixer = std::move(mixer);
  l.ffn = std::move(ffn);
}

DecoderModel::DecoderModel(const io::ModelConfig& config, DecoderStack stack, vt::Device device,
                           vt::DType dtype)
    : config_(config), stack_(std::move(stack)), device_(device), dtype_(dtype) {
  VT_CHECK(vt::is_floating(dtype) && dtype != vt::DType::kF8E4M3, "model: activation dtype ",
           vt::dtype_name(dtype), " is not one of f32, bf16, f16");
  VT_CHECK(int64_t(stack_.layers_.size()) == config.text.num_hidden_layers, "model: ",
           stack_.layers_.size(), " layers built for num_hidden_layers ",
           config.text.num_hidden_layers);
  for (const DecoderStack::Layer& l : stack_.layers_) {
    cache_spec_.push_back(l.mixer->cache_spec());
    has_gdn_ = has_gdn_ || cache_spec_.back().kind == LayerCacheSpec::Kind::kGdn;
  }
}

void DecoderModel::check_stream(const vt::Stream& s, const char* what) const {
  VT_CHECK(s.device() == device_, "model ", what, ": a stream on ", s.device().str(),
           " for a model on ", device_.str());
}

vt::Tensor DecoderModel::forward(vt::Stream& s, const ForwardBatch& batch, CacheView& cache,
                                 const InputEmbeddings* embeds) {
  const BatchInputs in = [&] {
    vt::RegionScope region(s, "inputs");
    return prepare(s, batch, cache, nullptr, nullptr);
  }();
  return forward_prepared(s, in, cache, embeds);
}

BatchInputs DecoderModel::prepare(vt::Stream& s, const ForwardBatch& batch, CacheView& cache,
                                  const StepLayout* layout, const vt::Tensor* into) {
  check_stream(s, "forward");
  validate_forward_batch(batch, has_gdn_);
  if (!s.device().is_cpu()) {  // the indices go to the device as trusted: check them here
    int64_t blocks = 0, slots = 0;
    for (size_t i = 0; i < cache_spec_.size(); ++i) {
      const bool attn = cache_spec_[i].kind == LayerCacheSpec::Kind::kAttention;
      if (attn && blocks == 0) blocks = cache.attention(int64_t(i)).k.size(0);
      if (!attn && slots == 0) slots = cache.gdn(int64_t(i)).conv.size(0);
    }
    validate_step_ranges(batch, blocks, slots, stack_.embed_.size(0));
    VT_CHECK(layout == nullptr || !has_gdn_ ||
                 (layout->pad_state_slot >= 0 && layout->pad_state_slot < slots),
             "model forward: the padding state slot ", layout ? layout->pad_state_slot : -1,
             " is not one of the ", slots, " slots");
  }
  return make_batch_inputs(s, batch, rope(), dtype_, layout, into);
}

int64_t DecoderModel::packed_input_bytes(const StepLayout& layout) const {
  return models::packed_bytes(layout.batch, layout.batch, layout.table_width,
                              rope() ? vt::rope_table_width(rope()->rotary_dim) : 0);
}

vt::Tensor DecoderModel::forward_prepared(vt::Stream& s, const BatchInputs& in,
                                          CacheView& cache, const InputEmbeddings* embeds) {
  check_stream(s, "forward");
  const int64_t T = in.num_tokens, H = hidden_size();
  const float eps = float(config_.text.rms_norm_eps);
  const vt::RmsNormKind kind = stack_.norm_kind_;
  const auto& layers = stack_.layers_;
  // The residual stream is in the activation dtype: in bf16 every residual add rounds,
  // as the oracle's (qwen3_5.md §4).
  vt::Tensor x = vt::Tensor::empty({T, H}, dtype_, device_);
  vt::Tensor a = vt::Tensor::empty({T, H}, dtype_, device_);
  vt::Tensor m = vt::Tensor::empty({T, H}, dtype_, device_);
  {
    vt::RegionScope region(s, "embed");
    vt::embedding(s, stack_.embed_, in.token_ids, x);
    if (embeds != nullptr) scatter_input_embeddings(s, *embeds, x);
    vt::rms_norm(s, x, layers.empty() ? stack_.norm_ : layers[0].input_norm, eps, kind, a);
  }
  // Profiler regions (vt/profile.h): each half of a layer with the fused add + norm
  // that ends it.
  const char* ffn_region = config_.text.moe ? "moe" : "mlp";
  // The mixer's add is fused with post_attention_layernorm, the FFN's with the next
  // layer's input_layernorm, the last one's with the final norm.
  for (size_t i = 0; i < layers.size(); ++i) {
    const DecoderStack::Layer& l = layers[i];
    {
      const bool attn = cache_spec_[i].kind == LayerCacheSpec::Kind::kAttention;
      vt::RegionScope region(s, attn ? "attn" : "gdn", int64_t(i));
      l.mixer->forward(s, a, in, cache, int64_t(i), m);
      vt::add_rms_norm(s, x, m, l.post_norm, eps, kind, a);
    }
    vt::RegionScope region(s, ffn_region, int64_t(i));
    l.ffn->forward(s, a, m);
    const vt::Tensor& next_norm = i + 1 < layers.size() ? layers[i + 1].input_norm : stack_.norm_;
    vt::add_rms_norm(s, x, m, next_norm, eps, kind, a);
  }
  return a;
}

vt::Tensor DecoderModel::compute_logits(vt::Stream& s, const vt::Tensor& hidden,
                                        const std::vector<int32_t>& rows) {
  check_stream(s, "compute_logits");
  vt::RegionScope region(s, "lm_head");
  VT_CHECK(hidden.dim() == 2 && hidden.size(1) == hidden_size(), "compute_logits: hidden ",
           hidden.str(), " is not [T, ", hidden_size(), "]");
  const int64_t R = int64_t(rows.size());
  bool all_rows = R == hidden.size(0);  // every row in order: no gather (CUDA graphs)
  for (int64_t r = 0; all_rows && r < R; ++r) all_rows = rows[size_t(r)] == r;
  vt::Tensor picked = all_rows ? hidden : vt::Tensor::empty({R, hidden_size()}, dtype_, device_);
  if (!all_rows) vt::embedding(s, hidden, index_tensor(rows), picked);  // a row gather of hidden
  // Logits in the activation dtype: the bf16 oracle's logits are bf16 (qwen3_5.md §10).
  vt::Tensor logits = vt::Tensor::empty({R, vocab_size()}, dtype_, device_);
  vt::linear(s, picked, stack_.lm_head_, logits);
  return logits;
}

}  // namespace vtllm::models
