// Typed model configurations read from a Hugging Face `config.json`.
//
// The config family comes from the top-level `model_type` (llama, qwen3, qwen3_5_text,
// qwen3_5, qwen3_5_moe_text, qwen3_5_moe), as transformers' config classes; the model
// class (`architectures[0]`) is the models layer's: its registry hands the parser a
// ConfigClass. Every field left out of the file takes the default transformers 5.17
// gives it (docs/qwen3_5.md §2.2); the defaults live in config.cpp next to the field names.
//
// The structs are plain values; nothing here needs JSON to be read. Errors name the
// file and the field ("config.json: text_config.hidden_size: expected an integer,
// got \"abc\"").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vt/dtype.h"

namespace vtllm::io {

enum class Architecture { kLlama, kQwen3, kQwen3_5, kQwen3_5Moe };
const char* architecture_name(Architecture a);  // "llama", "qwen3", "qwen3_5", "qwen3_5_moe"

enum class LayerType { kFullAttention, kLinearAttention, kSlidingAttention };
const char* layer_type_name(LayerType t);  // transformers' spelling: "full_attention", ...

// transformers' `rope_parameters` after standardisation (a top-level `rope_theta`,
// `partial_rotary_factor` or legacy `rope_scaling` is folded in).
struct RopeParameters {
  std::string rope_type = "default";  // "default", "llama3", "linear", "yarn", ...
  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;  // Qwen3.5: 0.25
  // Qwen3.5: 3 entries, {11, 11, 10} when absent (the rotary module's default, whatever
  // head_dim is); need not sum to rotary_dim / 2. Empty for 1-D RoPE.
  std::vector<int64_t> mrope_section;
  bool mrope_interleaved = false;      // recorded; transformers 5.17 always interleaves for Qwen3.5
  // Scaling parameters (llama3 / linear / yarn); 0 when absent.
  double factor = 0;
  double low_freq_factor = 0;
  double high_freq_factor = 0;
  int64_t original_max_position_embeddings = 0;
};

// Gated DeltaNet (linear attention) dimensions, Qwen3.5 family.
struct LinearAttentionConfig {
  int64_t conv_kernel_dim = 4;     // K
  int64_t num_key_heads = 16;      // Hk
  int64_t num_value_heads = 32;    // Hv
  int64_t key_head_dim = 128;      // Dk
  int64_t value_head_dim = 128;    // Dv

  int64_t key_dim() const { return num_key_heads * key_head_dim; }
  int64_t value_dim() const { return num_value_heads * value_head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
};

// Sparse MoE MLP (Qwen3.5-MoE): every layer's MLP is this block.
struct MoeConfig {
  int64_t num_experts = 256;
  int64_t num_experts_per_tok = 8;
  int64_t moe_intermediate_size = 512;
  int64_t shared_expert_intermediate_size = 512;
  double router_aux_loss_coef = 0.001;  // training only
};

struct TextConfig {
  std::string model_type;  // "qwen3_5_text", "qwen3", "llama", ...
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // dense MLP width (0 for MoE)
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  std::string hidden_act = "silu";
  double rms_norm_eps = 1e-6;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  bool mlp_bias = false;           // Llama only
  bool attn_output_gate = false;   // Qwen3.5: always true (transformers does not read the field)
  std::optional<int64_t> sliding_window;  // Qwen3 with use_sliding_window
  std::vector<LayerType> layer_types;     // one per layer
  RopeParameters rope;
  std::optional<LinearAttentionConfig> linear_attention;  // Qwen3.5 family
  std::optional<MoeConfig> moe;                           // Qwen3.5-MoE

  // head_dim x partial_rotary_factor, truncated (transformers' rotary dim D; an odd D
  // rotates 2 ceil(D/2) dims, vt::rope_table_width).
  int64_t rotary_dim() const;
  int64_t count_layers(LayerType t) const;
};

// Qwen3.5 vision tower (`vision_config`).
struct VisionConfig {
  int64_t depth = 27;
  int64_t hidden_size = 1152;
  std::string hidden_act = "gelu_pytorch_tanh";
  int64_t intermediate_size = 4304;
  int64_t num_heads = 16;
  int64_t in_channels = 3;
  int64_t patch_size = 16;
  int64_t spatial_merge_size = 2;
  int64_t temporal_patch_size = 2;
  int64_t out_hidden_size = 3584;
  int64_t num_position_embeddings = 2304;
};

struct ModelConfig {
  std::string architecture_class;  // architectures[0], e.g. "Qwen3_5ForConditionalGeneration"
  Architecture arch = Architecture::kQwen3;
  bool multimodal = false;  // the class has a vision tower (ConfigClass::multimodal)
  std::string model_type;   // top level
  TextConfig text;
  std::optional<VisionConfig> vision;  // set iff multimodal
  // Whether lm_head shares embed_tokens: the flag of the class's own config (the top
  // level for ConditionalGeneration, the text config otherwise), as transformers does.
  bool tie_word_embeddings = false;
  // `dtype` (or legacy `torch_dtype`); f32 when absent, as transformers loads it.
  vt::DType dtype = vt::DType::kF32;
  // Multimodal token ids (Qwen3.5).
  int64_t image_token_id = 0, video_token_id = 0;
  int64_t vision_start_token_id = 0, vision_end_token_id = 0;
  std::vector<int64_t> eos_token_ids;  // from config.json; generation_config.json overrides
};

// What a model class tells the parser about itself (models/registry.h holds the table).
struct ConfigClass {
  std::string name;                      // architectures[0], e.g. "Qwen3_5ForCausalLM"
  bool multimodal = false;               // vision tower + language model under text_config
  std::vector<std::string> model_types;  // the top-level model_type values it accepts
};

// config.json's `architectures[0]`; throws naming the field when absent or empty.
std::string architecture_class(const std::string& json_text, const std::string& file_name);
// Parses config.json text as class `cls` (whose name must be architectures[0]);
// `file_name` labels errors.
ModelConfig parse_model_config(const std::string& json_text, const std::string& file_name,
                               const ConfigClass& cls);

// `generation_config.json`: stop ids and default sampling. Absent fields stay unset.
struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> bos_token_id, pad_token_id;
  std::optional<bool> do_sample;
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k, max_new_tokens;
};

GenerationConfig parse_generation_config(const std::string& json_text, const std::string& file_name);
// Reads DIR/generation_config.json; an empty config when the file does not exist.
GenerationConfig load_generation_config(const std::string& dir);

}  // namespace vtllm::io
