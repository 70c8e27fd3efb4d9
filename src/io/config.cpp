#include "io/config.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "base/json.h"

namespace vtllm::io {

namespace {

using Fields = JsonFields;

// The config families by top-level model_type, as transformers' CONFIG_MAPPING: which
// typed config a config.json is. Model classes are the models layer's (its registry).
struct ConfigFamily {
  const char* model_type;
  Architecture arch;
};

const std::vector<ConfigFamily>& config_families() {
  static const std::vector<ConfigFamily> t = {
      {"llama", Architecture::kLlama},
      {"qwen3", Architecture::kQwen3},
      {"qwen3_5_text", Architecture::kQwen3_5},
      {"qwen3_5", Architecture::kQwen3_5},
      {"qwen3_5_moe_text", Architecture::kQwen3_5Moe},
      {"qwen3_5_moe", Architecture::kQwen3_5Moe},
  };
  return t;
}

bool is_qwen3_5(Architecture a) { return a == Architecture::kQwen3_5 || a == Architecture::kQwen3_5Moe; }

vt::DType parse_torch_dtype(const Fields& f, const char* key, const std::string& s) {
  if (s == "float32" || s == "float") return vt::DType::kF32;
  if (s == "bfloat16") return vt::DType::kBF16;
  if (s == "float16" || s == "half") return vt::DType::kF16;
  f.fail(key, "unsupported dtype '" + s + "' (expected float32, bfloat16 or float16)");
}

// `dtype` (transformers 5) or `torch_dtype` (4.x), top level first; f32 when absent.
vt::DType parse_weight_dtype(const Fields& top, const Fields& text) {
  for (const Fields* f : {&top, &text})
    for (const char* key : {"dtype", "torch_dtype"})
      if (auto s = f->opt_string(key)) return parse_torch_dtype(*f, key, *s);
  return vt::DType::kF32;
}

// transformers' rope standardisation: `rope_parameters` (or the legacy `rope_scaling`)
// wins, then a top-level `rope_theta` / `partial_rotary_factor`, then the class default.
RopeParameters parse_rope(const Fields& f, Architecture arch) {
  RopeParameters r;
  std::optional<Fields> rp = f.child("rope_parameters");
  if (!rp) rp = f.child("rope_scaling");
  auto number = [&](const char* key, double fallback) {
    if (rp && rp->has(key)) return *rp->opt_double(key);
    return f.get_double(key, fallback);
  };
  if (rp) {
    for (const char* per_layer : {"full_attention", "linear_attention", "sliding_attention"})
      if (rp->has(per_layer)) rp->fail(per_layer, "per-layer-type rope parameters are not supported");
    r.rope_type = rp->opt_string("rope_type").value_or(rp->get_string("type", "default"));
    r.factor = rp->get_double("factor", 0);
    r.low_freq_factor = rp->get_double("low_freq_factor", 0);
    r.high_freq_factor = rp->get_double("high_freq_factor", 0);
    r.original_max_position_embeddings = rp->get_int("original_max_position_embeddings", 0);
  }
  r.rope_theta = number("rope_theta", 10000.0);
  r.partial_rotary_factor = number("partial_rotary_factor", is_qwen3_5(arch) ? 0.25 : 1.0);
  if (is_qwen3_5(arch)) {
    // The rotary module's own default when the config has none (§2.2).
    r.mrope_section = (rp ? rp->opt_int_list("mrope_section") : std::nullopt)
                          .value_or(std::vector<int64_t>{11, 11, 10});
    r.mrope_interleaved = rp && rp->get_bool("mrope_interleaved", false);
  }
  const std::string where = rp ? rp->prefix() : f.path("rope_parameters");
  if (r.rope_theta <= 0) VT_THROW(f.file(), ": ", where, ".rope_theta must be positive, got ", r.rope_theta);
  if (!(r.partial_rotary_factor > 0 && r.partial_rotary_factor <= 1))
    VT_THROW(f.file(), ": ", where, ".partial_rotary_factor must be in (0, 1], got ", r.partial_rotary_factor);
  return r;
}

std::vector<LayerType> parse_layer_types(const Fields& f, Architecture arch, int64_t n_layers,
                                         std::optional<int64_t> sliding_window) {
  std::vector<LayerType> out;
  if (auto names = f.opt_string_list("layer_types")) {
    if (int64_t(names->size()) != n_layers)
      f.fail("layer_types", str_cat("has ", names->size(), " entries for ", n_layers, " layers"));
    for (size_t i = 0; i < names->size(); ++i) {
      std::string s = (*names)[i];
      if (s == "mamba") s = "linear_attention";  // transformers' legacy remap
      if (s == "attention") s = "full_attention";
      if (s == "full_attention") {
        out.push_back(LayerType::kFullAttention);
      } else if (s == "linear_attention" && is_qwen3_5(arch)) {
        out.push_back(LayerType::kLinearAttention);
      } else if (s == "sliding_attention" && arch == Architecture::kQwen3) {
        out.push_back(LayerType::kSlidingAttention);
      } else {
        f.fail("layer_types", str_cat("entry ", i, " '", (*names)[i], "' is not a layer type of ",
                                      architecture_name(arch)));
      }
    }
    return out;
  }
  if (is_qwen3_5(arch)) {
    const int64_t interval = f.get_int("full_attention_interval", 4);
    if (interval <= 0) f.fail("full_attention_interval", str_cat("must be positive, got ", interval));
    for (int64_t i = 0; i < n_layers; ++i)
      out.push_back((i + 1) % interval ? LayerType::kLinearAttention : LayerType::kFullAttention);
  } else if (arch == Architecture::kQwen3) {
    const int64_t max_window_layers = f.get_int("max_window_layers", 28);
    for (int64_t i = 0; i < n_layers; ++i)
      out.push_back(sliding_window && i >= max_window_layers ? LayerType::kSlidingAttention
                                                             : LayerType::kFullAttention);
  } else {
    out.assign(size_t(n_layers), LayerType::kFullAttention);
  }
  return out;
}

// Class defaults of the text configs (transformers 5.17).
struct TextDefaults {
  int64_t vocab, hidden, intermediate, layers, heads, kv_heads, head_dim, max_pos;
};
TextDefaults text_defaults(Architecture a) {
  switch (a) {
    case Architecture::kLlama: return {32000, 4096, 11008, 32, 32, 0, 0, 2048};
    case Architecture::kQwen3: return {151936, 4096, 22016, 32, 32, 32, 128, 32768};
    case Architecture::kQwen3_5: return {248320, 4096, 12288, 32, 16, 4, 256, 32768};
    case Architecture::kQwen3_5Moe: return {248320, 2048, 0, 40, 16, 2, 256, 32768};
  }
  VT_THROW("unknown architecture");
}

// Bounds far past any real model, so a corrupt config cannot ask for absurd
// allocations (a layer list of 10^12 entries) or overflow element counts.
constexpr int64_t kMaxDim = int64_t(1) << 24;
constexpr int64_t kMaxLayers = int64_t(1) << 14;

void check_positive(const Fields& f, const char* key, int64_t v, int64_t max = kMaxDim) {
  if (v <= 0) f.fail(key, str_cat("must be positive, got ", v));
  if (v > max) f.fail(key, str_cat(v, " is past the supported maximum ", max));
}

TextConfig parse_text(const Fields& f, Architecture arch) {
  const TextDefaults d = text_defaults(arch);
  TextConfig t;
  t.model_type = f.get_string("model_type", "");
  t.vocab_size = f.get_int("vocab_size", d.vocab);
  t.hidden_size = f.get_int("hidden_size", d.hidden);
  if (arch != Architecture::kQwen3_5Moe) t.intermediate_size = f.get_int("intermediate_size", d.intermediate);
  t.num_hidden_layers = f.get_int("num_hidden_layers", d.layers);
  t.num_attention_heads = f.get_int("num_attention_heads", d.heads);
  check_positive(f, "vocab_size", t.vocab_size);
  check_positive(f, "hidden_size", t.hidden_size);
  check_positive(f, "num_hidden_layers", t.num_hidden_layers, kMaxLayers);
  check_positive(f, "num_attention_heads", t.num_attention_heads);
  if (arch != Architecture::kQwen3_5Moe) check_positive(f, "intermediate_size", t.intermediate_size);
  // Llama and Qwen3: a null or absent num_key_value_heads means plain multi-head attention.
  t.num_key_value_heads = f.get_int("num_key_value_heads", d.kv_heads ? d.kv_heads : t.num_attention_heads);
  check_positive(f, "num_key_value_heads", t.num_key_value_heads);
  if (t.num_attention_heads % t.num_key_value_heads != 0)
    f.fail("num_key_value_heads", str_cat(t.num_key_value_heads, " does not divide num_attention_heads ",
                                          t.num_attention_heads));
  if (arch == Architecture::kLlama && t.hidden_size % t.num_attention_heads != 0)
    f.fail("num_attention_heads", str_cat(t.num_attention_heads, " does not divide hidden_size ", t.hidden_size));
  t.head_dim = f.get_int("head_dim", d.head_dim ? d.head_dim : t.hidden_size / t.num_attention_heads);
  check_positive(f, "head_dim", t.head_dim);
  t.hidden_act = f.get_string("hidden_act", "silu");
  t.rms_norm_eps = f.get_double("rms_norm_eps", 1e-6);
  if (!(t.rms_norm_eps > 0)) f.fail("rms_norm_eps", str_cat("must be positive, got ", t.rms_norm_eps));
  t.max_position_embeddings = f.get_int("max_position_embeddings", d.max_pos);
  t.tie_word_embeddings = f.get_bool("tie_word_embeddings", false);
  t.attention_bias = f.get_bool("attention_bias", false);
  if (arch == Architecture::kLlama) t.mlp_bias = f.get_bool("mlp_bias", false);
  // transformers never reads attn_output_gate: the Qwen3.5 gate is always on (§2.2).
  t.attn_output_gate = is_qwen3_5(arch);
  if (arch == Architecture::kQwen3 && f.get_bool("use_sliding_window", false))
    t.sliding_window = f.get_int("sliding_window", 4096);
  t.layer_types = parse_layer_types(f, arch, t.num_hidden_layers, t.sliding_window);
  t.rope = parse_rope(f, arch);

  // transformers rotates 2 ceil(rot / 2) dims (cat(freqs, freqs)); past head_dim its
  // apply_rotary_pos_emb fails, so an odd rot is refused only when it is head_dim.
  const int64_t rot = t.rotary_dim();
  if (rot <= 0 || 2 * ((rot + 1) / 2) > t.head_dim)
    f.fail("rope_parameters", str_cat("rotary dim ", rot, " (head_dim ", t.head_dim,
                                      " x partial_rotary_factor ", t.rope.partial_rotary_factor,
                                      ") must be positive and, rounded up "
                                      "to even, at most head_dim"));
  // transformers indexes three sections and clips each interleave to the frequencies
  // there are, so the sections need not sum to rotary_dim / 2 (qwen3_5.md §7.3).
  if (!t.rope.mrope_section.empty()) {
    if (t.rope.mrope_section.size() != 3)
      f.fail("rope_parameters", str_cat("mrope_section has ", t.rope.mrope_section.size(),
                                        " entries; expected 3 (temporal, height, width)"));
    for (int64_t s : t.rope.mrope_section)
      if (s < 0 || s > kMaxDim) f.fail("rope_parameters", str_cat("mrope_section entry ", s, " is out of range"));
  }

  if (is_qwen3_5(arch)) {
    LinearAttentionConfig la;
    la.conv_kernel_dim = f.get_int("linear_conv_kernel_dim", 4);
    la.key_head_dim = f.get_int("linear_key_head_dim", 128);
    la.value_head_dim = f.get_int("linear_value_head_dim", 128);
    la.num_key_heads = f.get_int("linear_num_key_heads", 16);
    la.num_value_heads = f.get_int("linear_num_value_heads", 32);
    check_positive(f, "linear_conv_kernel_dim", la.conv_kernel_dim);
    check_positive(f, "linear_key_head_dim", la.key_head_dim);
    check_positive(f, "linear_value_head_dim", la.value_head_dim);
    check_positive(f, "linear_num_key_heads", la.num_key_heads);
    check_positive(f, "linear_num_value_heads", la.num_value_heads);
    if (la.num_value_heads % la.num_key_heads != 0)
      f.fail("linear_num_value_heads", str_cat(la.num_value_heads, " is not a multiple of linear_num_key_heads ",
                                               la.num_key_heads));
    t.linear_attention = la;
  }
  if (arch == Architecture::kQwen3_5Moe) {
    MoeConfig m;
    m.num_experts = f.get_int("num_experts", 256);
    m.num_experts_per_tok = f.get_int("num_experts_per_tok", 8);
    m.moe_intermediate_size = f.get_int("moe_intermediate_size", 512);
    m.shared_expert_intermediate_size = f.get_int("shared_expert_intermediate_size", 512);
    m.router_aux_loss_coef = f.get_double("router_aux_loss_coef", 0.001);
    check_positive(f, "num_experts", m.num_experts);
    check_positive(f, "num_experts_per_tok", m.num_experts_per_tok);
    check_positive(f, "moe_intermediate_size", m.moe_intermediate_size);
    check_positive(f, "shared_expert_intermediate_size", m.shared_expert_intermediate_size);
    if (m.num_experts_per_tok > m.num_experts)
      f.fail("num_experts_per_tok", str_cat(m.num_experts_per_tok, " exceeds num_experts ", m.num_experts));
    t.moe = m;
  }
  return t;
}

VisionConfig parse_vision(const Fields& f) {
  VisionConfig v;
  v.depth = f.get_int("depth", v.depth);
  v.hidden_size = f.get_int("hidden_size", v.hidden_size);
  v.hidden_act = f.get_string("hidden_act", v.hidden_act);
  v.intermediate_size = f.get_int("intermediate_size", v.intermediate_size);
  v.num_heads = f.get_int("num_heads", v.num_heads);
  v.in_channels = f.get_int("in_channels", v.in_channels);
  v.patch_size = f.get_int("patch_size", v.patch_size);
  v.spatial_merge_size = f.get_int("spatial_merge_size", v.spatial_merge_size);
  v.temporal_patch_size = f.get_int("temporal_patch_size", v.temporal_patch_size);
  v.out_hidden_size = f.get_int("out_hidden_size", v.out_hidden_size);
  v.num_position_embeddings = f.get_int("num_position_embeddings", v.num_position_embeddings);
  check_positive(f, "depth", v.depth, kMaxLayers);
  for (const char* k : {"hidden_size", "intermediate_size", "num_heads", "in_channels", "patch_size",
                        "spatial_merge_size", "temporal_patch_size", "out_hidden_size", "num_position_embeddings"})
    check_positive(f, k, f.get_int(k, 1));
  if (v.hidden_size % v.num_heads != 0)
    f.fail("num_heads", str_cat(v.num_heads, " does not divide hidden_size ", v.hidden_size));
  return v;
}

}  // namespace

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::kLlama: return "llama";
    case Architecture::kQwen3: return "qwen3";
    case Architecture::kQwen3_5: return "qwen3_5";
    case Architecture::kQwen3_5Moe: return "qwen3_5_moe";
  }
  return "?";
}

const char* layer_type_name(LayerType t) {
  switch (t) {
    case LayerType::kFullAttention: return "full_attention";
    case LayerType::kLinearAttention: return "linear_attention";
    case LayerType::kSlidingAttention: return "sliding_attention";
  }
  return "?";
}

int64_t TextConfig::rotary_dim() const { return int64_t(double(head_dim) * rope.partial_rotary_factor); }

int64_t TextConfig::count_layers(LayerType t) const {
  int64_t n = 0;
  for (LayerType x : layer_types) n += x == t;
  return n;
}

std::string architecture_class(const std::string& json_text, const std::string& file_name) {
  const Json root = json_parse(json_text, file_name);
  const Fields top(root, file_name, "");
  auto archs = top.opt_string_list("architectures");
  if (!archs) top.fail("architectures", "required field is missing");
  if (archs->empty()) top.fail("architectures", "is empty");
  return (*archs)[0];
}

ModelConfig parse_model_config(const std::string& json_text, const std::string& file_name,
                               const ConfigClass& cls) {
  const Json root = json_parse(json_text, file_name);
  const Fields top(root, file_name, "");

  ModelConfig c;
  c.architecture_class = architecture_class(json_text, file_name);
  if (c.architecture_class != cls.name)
    top.fail("architectures", "'" + c.architecture_class + "' is not the class " + cls.name);
  c.multimodal = cls.multimodal;
  auto model_type = top.opt_string("model_type");
  if (!model_type) top.fail("model_type", "required field is missing");
  bool type_ok = false;
  for (const std::string& m : cls.model_types) type_ok |= m == *model_type;
  if (!type_ok) top.fail("model_type", "'" + *model_type + "' does not match architecture " + cls.name);
  const ConfigFamily* family = nullptr;
  for (const ConfigFamily& f : config_families())
    if (*model_type == f.model_type) family = &f;
  if (!family) top.fail("model_type", "'" + *model_type + "' is not a config family vtllm reads");
  c.model_type = *model_type;
  c.arch = family->arch;

  // Qwen3.5 keeps the language model under text_config (a CausalLM class reads it from
  // there too, as transformers' base_config_key does); others are flat.
  const Json empty = Json::object();
  std::optional<Fields> text_fields = is_qwen3_5(c.arch) ? top.child("text_config") : std::nullopt;
  if (c.multimodal && !text_fields) text_fields = Fields(empty, file_name, "text_config");
  const Fields& tf = text_fields ? *text_fields : top;
  c.text = parse_text(tf, c.arch);

  if (c.multimodal) {
    std::optional<Fields> vf = top.child("vision_config");
    c.vision = parse_vision(vf ? *vf : Fields(empty, file_name, "vision_config"));
    c.tie_word_embeddings = top.get_bool("tie_word_embeddings", false);
    c.image_token_id = top.get_int("image_token_id", 248056);
    c.video_token_id = top.get_int("video_token_id", 248057);
    c.vision_start_token_id = top.get_int("vision_start_token_id", 248053);
    c.vision_end_token_id = top.get_int("vision_end_token_id", 248054);
  } else {
    c.tie_word_embeddings = c.text.tie_word_embeddings;
  }

  c.dtype = parse_weight_dtype(top, tf);
  c.eos_token_ids = top.int_or_list("eos_token_id");
  if (c.eos_token_ids.empty() && &tf != &top) c.eos_token_ids = tf.int_or_list("eos_token_id");
  if (c.arch == Architecture::kLlama && !root.contains("eos_token_id")) c.eos_token_ids = {2};  // LlamaConfig default
  return c;
}


GenerationConfig parse_generation_config(const std::string& json_text, const std::string& file_name) {
  const Json root = json_parse(json_text, file_name);
  const Fields f(root, file_name, "");
  GenerationConfig g;
  g.eos_token_ids = f.int_or_list("eos_token_id");
  g.bos_token_id = f.opt_int("bos_token_id");
  g.pad_token_id = f.opt_int("pad_token_id");
  g.do_sample = f.opt_bool("do_sample");
  g.temperature = f.opt_double("temperature");
  g.top_p = f.opt_double("top_p");
  g.min_p = f.opt_double("min_p");
  g.repetition_penalty = f.opt_double("repetition_penalty");
  g.top_k = f.opt_int("top_k");
  g.max_new_tokens = f.opt_int("max_new_tokens");
  return g;
}

GenerationConfig load_generation_config(const std::string& dir) {
  const auto path = std::filesystem::path(dir) / "generation_config.json";
  if (!std::filesystem::exists(path)) return {};
  return parse_generation_config(read_file(path.string()), path.string());
}

}  // namespace vtllm::io
