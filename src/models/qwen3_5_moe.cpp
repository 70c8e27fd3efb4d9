// Qwen3.5 / Qwen3.6 MoE hybrids (Qwen3.6-35B-A3B; qwen3_5.md §9.2): the dense Qwen3.5
// decoder (qwen3_5.h) with the sparse MoE block (layers/moe.h) as every layer's MLP;
// no dense layers. Qwen3_5MoeForCausalLM and the text model of
// Qwen3_5MoeForConditionalGeneration.
#include "base/error.h"
#include "models/layers/moe.h"
#include "models/qwen3_5.h"

namespace vtllm::models {

std::unique_ptr<Model> build_qwen3_5_moe(const io::ModelConfig& config, ParamSink& w,
                                         const ModelOptions& options, vt::DType dtype) {
  const io::TextConfig& t = config.text;
  VT_CHECK(t.moe.has_value(), "qwen3_5_moe: the config has no MoE fields");
  const io::MoeConfig moe = *t.moe;
  return build_qwen3_5_decoder(
      config, w, options, dtype, "qwen3_5_moe", [&](ParamSink& ws, const std::string& prefix) {
        return std::make_unique<SparseMoeBlock>(t.hidden_size, moe, ws, prefix);
      });
}

}  // namespace vtllm::models
