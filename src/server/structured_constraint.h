// A request's output constraint as a grammar over the served vocabulary: the
// structured-output fields (StructuredOutput) or a forced tool call (tool_choice
// "required" or a named function), compiled with src/structured, and the per-sample
// matcher state the engine's token-constraint hook drives.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/token_constraint.h"
#include "server/protocol.h"
#include "server/reasoning_parser.h"
#include "server/tool_parser.h"
#include "structured/matcher.h"
#include "structured/token_vocab.h"
#include "text/tokenizer.h"

namespace vtllm::server {

// vLLM's --structured-outputs-config, as far as it means something here: the grammar
// engine follows xgrammar's semantics (backend auto or xgrammar).
struct StructuredOutputsConfig {
  // Compact JSON for requests that do not say (structured_outputs.disable_any_whitespace).
  bool disable_any_whitespace = false;
  // Constraints apply from the first token, reasoning or not (no gate at </think>).
  bool enable_in_reasoning = false;
  // Its reasoning_parser key (vLLM's --reasoning-parser sets the same field).
  std::optional<ReasoningFormat> reasoning_parser;
};

// Parses `json_text`, a JSON object of vLLM's StructuredOutputsConfig fields: backend
// ("auto" or "xgrammar"; guidance, outlines and lm-format-enforcer are refused),
// disable_fallback, disable_any_whitespace, disable_additional_properties (guidance's,
// accepted without effect), enable_in_reasoning (booleans), reasoning_parser (qwen3,
// deepseek_r1 or ""), reasoning_parser_plugin (must be ""). Throws naming the key.
StructuredOutputsConfig parse_structured_outputs_config(std::string_view json_text);

// Compiles constraints against one vocabulary, caching each compiled grammar by its
// kind and text. Thread-safe.
class StructuredCompiler {
 public:
  // `vocab_size`: the mask width (the model's logits rows; 0: the tokenizer's ids).
  // `stop_ids`: the ids that end a generation (empty: the tokenizer's EOS).
  StructuredCompiler(const text::Tokenizer& tokenizer, size_t vocab_size,
                     std::vector<int32_t> stop_ids);

  // Throws ApiError 400 naming `so.param` when the schema, regex or grammar is
  // malformed or uses a feature the grammar engine does not support (the message
  // names it).
  std::shared_ptr<const structured::CompiledGrammar> compile(const StructuredOutput& so);
  // A grammar forcing a call of `name` (empty: any of `tools`), one call or with
  // `parallel` one or more, in `format`. ApiError 400 naming "tools" when a tool's
  // parameters schema is unsupported.
  std::shared_ptr<const structured::CompiledGrammar> compile_tool_call(
      const std::vector<ToolFunction>& tools, const std::string& name, bool parallel,
      ToolCallFormat format);

  const structured::TokenVocab& vocab() const { return vocab_; }

  // A factory making one GrammarConstraint per sample over `grammar`.
  static engine::ConstraintFactory factory(
      std::shared_ptr<const structured::CompiledGrammar> grammar);

 private:
  std::shared_ptr<const structured::CompiledGrammar> cached(
      const std::string& key, const std::string& param,
      const std::function<structured::Grammar()>& build);

  structured::TokenVocab vocab_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const structured::CompiledGrammar>> cache_;
};

// A request's constraint under a reasoning parser, in vLLM's order (its structured-output
// manager's reasoning gate, decided per prompt): the constraint applies to what follows
// the reasoning. A prompt that already ended the reasoning (prompt_ids_end_reasoning:
// enable_thinking false) is constrained from the first output token; any other prompt,
// one without tags included, generates freely until its first </think>, and the
// constraint applies from the token after it.
engine::ConstraintFactory after_reasoning(engine::ConstraintFactory constraint,
                                          const ReasoningTokenIds& tags);

// One sample's position in a compiled grammar, as the engine's TokenConstraint. Not
// thread-safe (the engine calls one request's constraint in turn).
class GrammarConstraint : public engine::TokenConstraint {
 public:
  explicit GrammarConstraint(std::shared_ptr<const structured::CompiledGrammar> grammar)
      : matcher_(std::move(grammar)) {}
  // Bit t % 32 of word t / 32 set = token t allowed; words past the vocabulary's are 0.
  // `words` must cover the compiled vocabulary (vtllm::Error otherwise).
  void fill_bitmask(std::span<uint32_t> words) override;
  // Advances over `token`; false (and no change) when the grammar forbids it.
  bool accept(int32_t token) override { return matcher_.accept_token(token); }
  // True once a stop token was accepted.
  bool terminated() const override { return matcher_.is_terminated(); }
  // The grammar's forced run from here (structured::Matcher::forced_tokens).
  std::vector<int32_t> forced_tokens(size_t max) const override {
    return matcher_.forced_tokens(max);
  }

 private:
  structured::Matcher matcher_;
};

}  // namespace vtllm::server
