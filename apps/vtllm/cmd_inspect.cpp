// vtllm inspect DIR: what a model directory holds, without allocating its weights.
//
// Reads DIR/config.json (and the safetensors headers when DIR has weights) and
// prints the architecture, the layer pattern, `parameters: N` (the exact count of
// the transformers class, as the model declares its parameters: models/registry.h) and the bytes per dtype.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "models/registry.h"

namespace vtllm::cli {

namespace {

const char* short_name(io::LayerType t) {
  switch (t) {
    case io::LayerType::kFullAttention: return "full";
    case io::LayerType::kLinearAttention: return "linear";
    case io::LayerType::kSlidingAttention: return "sliding";
  }
  return "?";
}

// "[linear, linear, linear, full] x 16" when the layer types repeat a short period,
// else the list of every layer.
std::string layer_pattern(const std::vector<io::LayerType>& types) {
  const size_t n = types.size();
  size_t period = n;
  for (size_t p = 1; p < n; ++p) {
    if (n % p) continue;
    bool ok = true;
    for (size_t i = p; i < n && ok; ++i) ok = types[i] == types[i - p];
    if (ok) {
      period = p;
      break;
    }
  }
  std::string s = "[";
  for (size_t i = 0; i < period; ++i) s += std::string(i ? ", " : "") + short_name(types[i]);
  s += "]";
  if (period < n) s += " x " + std::to_string(n / period);
  return s;
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  Args args(argc, argv, {}, {"help", "json", "language-model-only"});
  if (args.has("help") || args.positional().size() != 1) {
    std::printf(
        "usage: vtllm inspect DIR [--json] [--language-model-only]\n\n"
        "Reports the architecture, layer pattern, exact parameter count and weight bytes per\n"
        "dtype of the model in DIR (its config.json; checkpoint headers when present),\n"
        "without allocating the weights.\n");
    return args.has("help") ? 0 : 2;
  }
  const std::string dir = args.positional()[0];
  const io::ModelConfig c = models::load_model_config(dir);
  const auto specs = models::declare_params(c, args.has("language-model-only"));
  const io::ParamTotals totals = io::param_totals(specs);
  const io::TextConfig& t = c.text;

  nlohmann::ordered_json j;
  j["architecture"] = c.architecture_class;
  j["model_type"] = c.model_type;
  j["multimodal"] = c.multimodal;
  j["hidden_size"] = t.hidden_size;
  j["num_hidden_layers"] = t.num_hidden_layers;
  j["vocab_size"] = t.vocab_size;
  j["layer_pattern"] = layer_pattern(t.layer_types);
  for (io::LayerType lt : {io::LayerType::kFullAttention, io::LayerType::kLinearAttention,
                           io::LayerType::kSlidingAttention})
    if (t.count_layers(lt)) j["layers"][io::layer_type_name(lt)] = t.count_layers(lt);
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["parameters"] = totals.parameters;
  j["tensors"] = totals.tensors;
  for (const auto& [dt, bytes] : totals.bytes) j["bytes"][vt::dtype_name(dt)] = bytes;

  std::optional<io::Checkpoint> ck;
  if (io::Checkpoint::exists(dir)) ck = io::Checkpoint::open(dir);
  if (ck) {
    j["checkpoint"]["shards"] = ck->shards().size();
    j["checkpoint"]["tensors"] = ck->tensors().size();
    for (const auto& [name, e] : ck->tensors()) {
      const uint64_t n = e.tensor->end - e.tensor->begin;
      auto& slot = j["checkpoint"]["bytes"][e.tensor->st_dtype];
      slot = (slot.is_null() ? 0 : slot.get<uint64_t>()) + n;
    }
  }
  if (args.has("json")) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }

  std::printf("architecture: %s (model_type %s%s)\n", c.architecture_class.c_str(), c.model_type.c_str(),
              c.multimodal ? ", text + vision" : "");
  std::printf("text: hidden %lld, %lld layers, vocab %lld, attention heads %lld/%lld x %lld, rotary dim %lld "
              "(theta %g%s)\n",
              (long long)t.hidden_size, (long long)t.num_hidden_layers, (long long)t.vocab_size,
              (long long)t.num_attention_heads, (long long)t.num_key_value_heads, (long long)t.head_dim,
              (long long)t.rotary_dim(), t.rope.rope_theta, t.rope.mrope_section.empty() ? "" : ", mrope");
  std::printf("layers: %s\n", layer_pattern(t.layer_types).c_str());
  if (t.linear_attention) {
    const auto& la = *t.linear_attention;
    std::printf("linear attention: key heads %lld, value heads %lld, dims %lld/%lld, conv %lld\n",
                (long long)la.num_key_heads, (long long)la.num_value_heads, (long long)la.key_head_dim,
                (long long)la.value_head_dim, (long long)la.conv_kernel_dim);
  }
  if (t.moe) {
    std::printf("mlp: moe, %lld experts top-%lld, intermediate %lld, shared expert %lld\n",
                (long long)t.moe->num_experts, (long long)t.moe->num_experts_per_tok,
                (long long)t.moe->moe_intermediate_size, (long long)t.moe->shared_expert_intermediate_size);
  } else {
    std::printf("mlp: dense, intermediate %lld\n", (long long)t.intermediate_size);
  }
  if (c.vision && !args.has("language-model-only"))
    std::printf("vision: depth %lld, hidden %lld, heads %lld, out %lld\n", (long long)c.vision->depth,
                (long long)c.vision->hidden_size, (long long)c.vision->num_heads,
                (long long)c.vision->out_hidden_size);
  std::printf("lm_head: %s\n", c.tie_word_embeddings ? "tied to embed_tokens" : "separate");
  std::printf("parameters: %lld\n", (long long)totals.parameters);
  std::printf("tensors: %lld\n", (long long)totals.tensors);
  for (const auto& [dt, bytes] : totals.bytes)
    std::printf("bytes %s: %llu (%s)\n", vt::dtype_name(dt), (unsigned long long)bytes, gib(bytes).c_str());
  if (ck) {
    std::printf("checkpoint: %zu shard(s), %zu tensors\n", ck->shards().size(), ck->tensors().size());
    for (auto it = j["checkpoint"]["bytes"].begin(); it != j["checkpoint"]["bytes"].end(); ++it)
      std::printf("checkpoint bytes %s: %llu\n", it.key().c_str(), (unsigned long long)it.value().get<uint64_t>());
  }
  return 0;
}

}  // namespace vtllm::cli
