#include "server/structured_constraint.h"

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "server/api_error.h"
#include "structured/grammar.h"
#include "structured/json_schema.h"
#include "structured/regex_grammar.h"
#include "structured/tool_grammar.h"

namespace vtllm::server {

namespace {

// JSON Schema options as vLLM's default backend compiles a schema (xgrammar's
// compile_json_schema with strict_mode on and, disable_any_whitespace being off,
// any_whitespace on): closed objects and arrays, any [ \t\n] run between tokens. The
// request's `strict` flag changes nothing, as in vLLM.
structured::JsonSchemaOptions schema_options(const StructuredOutput& so) {
  structured::JsonSchemaOptions o;
  o.strict = true;
  o.any_whitespace = so.any_whitespace;
  return o;
}

}  // namespace

StructuredCompiler::StructuredCompiler(const text::Tokenizer& tokenizer, size_t vocab_size,
                                       std::vector<int32_t> stop_ids)
    : vocab_(structured::TokenVocab::from_tokenizer(tokenizer, vocab_size, std::move(stop_ids))) {}

std::shared_ptr<const structured::CompiledGrammar> StructuredCompiler::cached(
    const std::string& key, const std::string& param,
    const std::function<structured::Grammar()>& build) {
  {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  std::shared_ptr<const structured::CompiledGrammar> g;
  try {
    g = structured::CompiledGrammar::compile(build(), vocab_);
  } catch (const vtllm::Error& e) {
    throw ApiError::bad_request(param, str_cat("'", param, "': ", e.what()), "invalid_value");
  }
  std::lock_guard lock(mu_);
  return cache_.emplace(key, std::move(g)).first->second;
}

std::shared_ptr<const structured::CompiledGrammar> StructuredCompiler::compile(
    const StructuredOutput& so) {
  using Kind = StructuredOutput::Kind;
  switch (so.kind) {
    case Kind::kJson:
      return cached(str_cat("json:", so.any_whitespace ? "w:" : "c:", so.schema_json), so.param,
                    [&] {
                      return structured::parse_gbnf(
                          structured::json_schema_text_to_gbnf(so.schema_json, schema_options(so)));
                    });
    case Kind::kJsonObject:
      return cached(so.any_whitespace ? "json_object:w" : "json_object:c", so.param, [&] {
        return structured::parse_gbnf(structured::json_object_gbnf(schema_options(so)));
      });
    case Kind::kRegex:
      return cached("regex:" + so.regex, so.param,
                    [&] { return structured::regex_to_grammar(so.regex); });
    case Kind::kChoice: {
      std::string key = "choice";
      for (const std::string& c : so.choices) key += str_cat(":", c.size(), ":", c);
      return cached(key, so.param, [&] { return structured::choice_to_grammar(so.choices); });
    }
    case Kind::kGrammar:
      return cached("grammar:" + so.grammar, so.param,
                    [&] { return structured::parse_gbnf(so.grammar); });
  }
  VT_THROW("structured output: unknown kind");
}

std::shared_ptr<const structured::CompiledGrammar> StructuredCompiler::compile_tool_call(
    const std::vector<ToolFunction>& tools, const std::string& name, bool parallel,
    ToolCallFormat format) {
  std::vector<structured::ToolSpec> specs;
  std::string key =
      str_cat("tools:", format == ToolCallFormat::kHermes ? "h" : "x", parallel ? "p:" : "1:");
  for (const ToolFunction& t : tools) {
    if (!name.empty() && t.name != name) continue;
    specs.push_back({t.name, nlohmann::ordered_json::parse(t.parameters_json)});
    key += str_cat(t.name.size(), ":", t.name, t.parameters_json.size(), ":", t.parameters_json);
  }
  structured::ToolGrammarOptions o;
  o.format = format == ToolCallFormat::kHermes ? structured::ToolCallFormat::kHermesJson
                                               : structured::ToolCallFormat::kQwenXml;
  o.parallel = parallel;
  return cached(key, "tools",
                [&] { return structured::parse_gbnf(structured::tool_call_gbnf(specs, o)); });
}

engine::ConstraintFactory StructuredCompiler::factory(
    std::shared_ptr<const structured::CompiledGrammar> grammar) {
  return [g = std::move(grammar)](
             std::span<const int32_t>) -> std::shared_ptr<engine::TokenConstraint> {
    return std::make_shared<GrammarConstraint>(g);
  };
}

engine::ConstraintFactory after_reasoning(engine::ConstraintFactory constraint,
                                          const ReasoningTokenIds& tags) {
  engine::ConstraintFactory gated = engine::start_after_token(constraint, tags.end);
  return [constraint = std::move(constraint), gated = std::move(gated),
          tags](std::span<const int32_t> prompt) {
    return prompt_ids_end_reasoning(prompt, tags) ? constraint(prompt) : gated(prompt);
  };
}

void GrammarConstraint::fill_bitmask(std::span<uint32_t> words) {
  const size_t n = matcher_.compiled().vocab().mask_words();
  VT_CHECK(words.size() >= n, "grammar constraint: a mask of ", words.size(),
           " words for a vocabulary of ", n);
  std::fill(words.begin(), words.end(), 0u);
  matcher_.fill_next_token_bitmask(words.first(n));
}

}  // namespace vtllm::server
