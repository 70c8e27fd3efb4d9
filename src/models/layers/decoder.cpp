#include "models/layers/decoder.h"

#include <optional>
#include <string>

#include "base/error.h"
#include "models/layers/gdn.h"
#include "models/layers/mlp.h"
#include "vt/ops/embedding.h"
#include "vt/ops/gemm.h"
#include "vt/ops/norm.h"

namespace vtllm::models {

namespace {

struct Layer {
  vt::Tensor input_norm, post_norm;
  std::optional<FullAttention> attn;
  std::optional<GatedDeltaNet> gdn;
  std::optional<SwiGluMlp> mlp;
};

class DecoderModel final : public Model {
 public:
  DecoderModel(const io::ModelConfig& config, const DecoderSpec& spec, WeightStore& w,
               const ModelOptions& options, vt::DType dtype)
      : config_(config), spec_(spec), device_(w.device()), dtype_(dtype) {
    VT_CHECK(vt::is_floating(dtype) && dtype != vt::DType::kF8E4M3, "model: activation dtype ",
             vt::dtype_name(dtype), " is not one of f32, bf16, f16");
    const io::TextConfig& t = config.text;
    const std::string& p = w.prefix();
    const float eps = float(t.rms_norm_eps);
    embed_ = w.take(p + "embed_tokens.weight", {t.vocab_size, t.hidden_size});
    lm_head_ = config.tie_word_embeddings ? embed_
                                          : w.take("lm_head.weight", {t.vocab_size, t.hidden_size});
    norm_ = w.take(p + "norm.weight", {t.hidden_size});
    VT_CHECK(int64_t(t.layer_types.size()) == t.num_hidden_layers, "config: ",
             t.layer_types.size(), " layer_types for ", t.num_hidden_layers, " layers");
    for (int64_t i = 0; i < t.num_hidden_layers; ++i) {
      const std::string lp = p + "layers." + std::to_string(i) + ".";
      Layer& l = layers_.emplace_back();
      l.input_norm = w.take(lp + "input_layernorm.weight", {t.hidden_size});
      l.post_norm = w.take(lp + "post_attention_layernorm.weight", {t.hidden_size});
      LayerCacheSpec c;
      switch (t.layer_types[size_t(i)]) {
        case io::LayerType::kFullAttention:
          l.attn.emplace(spec.attention, w, lp + "self_attn.", options.fuse_attn_preamble);
          c.kind = LayerCacheSpec::Kind::kAttention;
          c.kv_heads = spec.attention.kv_heads;
          c.head_dim = spec.attention.head_dim;
          break;
        case io::LayerType::kLinearAttention:
          VT_CHECK(t.linear_attention.has_value(), "config: layer ", i,
                   " is linear_attention but the config has no linear-attention dimensions");
          l.gdn.emplace(*t.linear_attention, t.hidden_size, eps, w, lp + "linear_attn.");
          c = l.gdn->cache_spec();
          break;
        default:
          VT_THROW("config: layer ", i, " is ", io::layer_type_name(t.layer_types[size_t(i)]),
                   ", which vtllm's decoder does not build");
      }
      cache_spec_.push_back(c);
      l.mlp.emplace(t.hidden_size, t.intermediate_size, w, lp + "mlp.");
    }
    w.check_all_used();
    has_gdn_ = t.count_layers(io::LayerType::kLinearAttention) > 0;
  }

  const io::ModelConfig& config() const override { return config_; }
  const CacheSpec& cache_spec() const override { return cache_spec_; }
  vt::Device device() const override { return device_; }
  vt::DType dtype() const override { return dtype_; }

  vt::Tensor forward(vt::Stream& s, const ForwardBatch& batch, CacheView& cache) override {
    return forward_prepared(s, prepare(s, batch, cache, nullptr, nullptr), cache);
  }

  BatchInputs prepare(vt::Stream& s, const ForwardBatch& batch, CacheView& cache,
                      const StepLayout* layout, const vt::Tensor* into) override {
    check_stream(s, "forward");
    validate_forward_batch(batch, has_gdn_);
    if (!s.device().is_cpu()) {  // the indices go to the device as trusted: check them here
      int64_t blocks = 0, slots = 0;
      for (size_t i = 0; i < layers_.size(); ++i) {
        if (layers_[i].attn && blocks == 0) blocks = cache.attention(int64_t(i)).k.size(0);
        if (layers_[i].gdn && slots == 0) slots = cache.gdn(int64_t(i)).conv.size(0);
      }
      validate_step_ranges(batch, blocks, slots, embed_.size(0));
      VT_CHECK(layout == nullptr || !has_gdn_ ||
                   (layout->pad_state_slot >= 0 && layout->pad_state_slot < slots),
               "model forward: the padding state slot ", layout ? layout->pad_state_slot : -1,
               " is not one of the ", slots, " slots");
    }
    return make_batch_inputs(s, batch, rope(), dtype_, layout, into);
  }

  int64_t packed_input_bytes(const StepLayout& layout) const override {
    return models::packed_bytes(layout.batch, layout.batch, layout.table_width,
                                rope() ? rope()->rotary_dim : 0);
  }

  vt::Tensor forward_prepared(vt::Stream& s, const BatchInputs& in, CacheView& cache) override {
    check_stream(s, "forward");
    const int64_t T = in.num_tokens, H = hidden_size();
    const float eps = float(config_.text.rms_norm_eps);
    // The residual stream is in the activation dtype: in bf16 every residual add rounds,
    // as the oracle's (qwen3_5.md §4).
    vt::Tensor x = vt::Tensor::empty({T, H}, dtype_, device_);
    vt::Tensor a = vt::Tensor::empty({T, H}, dtype_, device_);
    vt::Tensor m = vt::Tensor::empty({T, H}, dtype_, device_);
    vt::embedding(s, embed_, in.token_ids, x);
    vt::rms_norm(s, x, layers_.empty() ? norm_ : layers_[0].input_norm, eps, spec_.norm_kind, a);
    // Each residual add is fused with the norm that reads its result (add_rms_norm: the
    // add rounds, then the norm, as add then rms_norm): the mixer's with
    // post_attention_layernorm, the MLP's with the next layer's input_layernorm, the last
    // one's with the final norm.
    for (size_t i = 0; i < layers_.size(); ++i) {
      const Layer& l = layers_[i];
      if (l.attn) {
        AttentionCache c = cache.attention(int64_t(i));
        l.attn->forward(s, a, in, c, m);
      } else {
        GdnState st = cache.gdn(int64_t(i));
        l.gdn->forward(s, a, in, st, m);
      }
      vt::add_rms_norm(s, x, m, l.post_norm, eps, spec_.norm_kind, a);
      l.mlp->forward(s, a, m);
      const vt::Tensor& next_norm = i + 1 < layers_.size() ? layers_[i + 1].input_norm : norm_;
      vt::add_rms_norm(s, x, m, next_norm, eps, spec_.norm_kind, a);
    }
    return a;
  }

  vt::Tensor compute_logits(vt::Stream& s, const vt::Tensor& hidden,
                            const std::vector<int32_t>& rows) override {
    check_stream(s, "compute_logits");
    VT_CHECK(hidden.dim() == 2 && hidden.size(1) == hidden_size(), "compute_logits: hidden ",
             hidden.str(), " is not [T, ", hidden_size(), "]");
    const int64_t R = int64_t(rows.size());
    bool all_rows = R == hidden.size(0);  // every row in order: no gather (CUDA graphs)
    for (int64_t r = 0; all_rows && r < R; ++r) all_rows = rows[size_t(r)] == r;
    vt::Tensor picked = all_rows ? hidden : vt::Tensor::empty({R, hidden_size()}, dtype_, device_);
    if (!all_rows) vt::embedding(s, hidden, index_tensor(rows), picked);  // a row gather of hidden
    // Logits in the activation dtype: the bf16 oracle's logits are bf16 (qwen3_5.md §10).
    vt::Tensor logits = vt::Tensor::empty({R, vocab_size()}, dtype_, device_);
    vt::linear(s, picked, lm_head_, logits);
    return logits;
  }

 private:
  const RopeSpec* rope() const { return spec_.uses_rope ? &spec_.attention.rope : nullptr; }

  void check_stream(const vt::Stream& s, const char* what) const {
    VT_CHECK(s.device() == device_, "model ", what, ": a stream on ", s.device().str(),
             " for a model on ", device_.str());
  }

  io::ModelConfig config_;
  DecoderSpec spec_;
  vt::Device device_;
  vt::DType dtype_;
  vt::Tensor embed_, lm_head_, norm_;
  std::vector<Layer> layers_;
  CacheSpec cache_spec_;
  bool has_gdn_ = false;
};

}  // namespace

std::unique_ptr<Model> build_decoder(const io::ModelConfig& config, const DecoderSpec& spec,
                                     WeightStore& weights, const ModelOptions& options,
                                     vt::DType dtype) {
  return std::make_unique<DecoderModel>(config, spec, weights, options, dtype);
}

}  // namespace vtllm::models
