#include "io/weight_names.h"

#include <cstdlib>


namespace vtllm::io {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

WeightName skip(const char* reason) {
  WeightName w;
  w.kind = WeightName::Kind::kSkip;
  w.reason = reason;
  return w;
}

// "<P>layers.<L>.mlp.experts.<E>.<gate|up|down>_proj.weight" -> the fused parameter.
bool parse_expert_part(const std::string& name, const std::string& text_prefix, WeightName* out) {
  static const std::string kMid = ".mlp.experts.";
  if (!starts_with(name, (text_prefix + "layers.").c_str())) return false;
  const size_t mid = name.find(kMid);
  if (mid == std::string::npos) return false;
  const std::string rest = name.substr(mid + kMid.size());  // "<E>.gate_proj.weight"
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string::npos || dot > 9) return false;
  for (size_t i = 0; i < dot; ++i)
    if (rest[i] < '0' || rest[i] > '9') return false;
  const std::string part = rest.substr(dot + 1);
  const std::string fused = name.substr(0, mid + kMid.size());  // "<P>layers.<L>.mlp.experts."
  out->kind = WeightName::Kind::kExpertPart;
  out->expert = std::atoll(rest.substr(0, dot).c_str());
  if (part == "gate_proj.weight") {
    out->part = WeightName::ExpertPart::kGate;
    out->param = fused + "gate_up_proj";
  } else if (part == "up_proj.weight") {
    out->part = WeightName::ExpertPart::kUp;
    out->param = fused + "gate_up_proj";
  } else if (part == "down_proj.weight") {
    out->part = WeightName::ExpertPart::kDown;
    out->param = fused + "down_proj";
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::string language_model_prefix(const ModelConfig& config) {
  return config.multimodal ? "model.language_model." : "model.";
}

WeightName map_weight_name(const std::string& name, const ModelConfig& config, bool language_model_only) {
  if (starts_with(name, "mtp.")) return skip("mtp draft head (unused by transformers)");
  if (starts_with(name, kVisionPrefix)) {
    if (!config.multimodal) return skip("vision tower (unused by a CausalLM class)");
    if (language_model_only) return skip("vision tower (--language-model-only)");
    return WeightName{WeightName::Kind::kParam, name, "", -1, WeightName::ExpertPart::kGate};
  }
  if (name == "lm_head.weight" && config.tie_word_embeddings) return skip("lm_head (tied to embed_tokens)");

  const std::string text_prefix = language_model_prefix(config);
  std::string canonical = name;
  if (starts_with(name, "model.language_model.")) {
    canonical = text_prefix + name.substr(sizeof("model.language_model.") - 1);
  } else if (starts_with(name, "model.")) {
    canonical = text_prefix + name.substr(sizeof("model.") - 1);
  }
  WeightName w;
  if (config.text.moe && parse_expert_part(canonical, text_prefix, &w)) return w;
  w.param = canonical;
  return w;
}

}  // namespace vtllm::io
