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
  o.any_whitespace = so.any_whitespace.value_or(true);
  return o;
}

}  // namespace

StructuredOutputsConfig parse_structured_outputs_config(std::string_view json_text) {
  constexpr const char* kFlag = "--structured-outputs-config";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception&) {
    VT_THROW(kFlag, ": '", json_text,
             "' is not JSON (expected e.g. '{\"disable_any_whitespace\": true}')");
  }
  if (!j.is_object()) VT_THROW(kFlag, ": expected a JSON object, got '", json_text, "'");
  StructuredOutputsConfig c;
  const auto boolean = [&](const std::string& k, const nlohmann::json& v) {
    if (!v.is_boolean()) VT_THROW(kFlag, ": '", k, "' must be true or false, got ", v.dump());
    return v.get<bool>();
  };
  const auto string = [&](const std::string& k, const nlohmann::json& v) {
    if (!v.is_string()) VT_THROW(kFlag, ": '", k, "' must be a string, got ", v.dump());
    return v.get<std::string>();
  };
  for (const auto& [k, v] : j.items()) {
    if (k == "backend") {
      const std::string b = string(k, v);
      if (b != "auto" && b != "xgrammar")
        VT_THROW(kFlag, ": backend '", b, "' is not available: vtllm's grammar engine follows ",
                 "xgrammar's semantics (backend auto or xgrammar)");
    } else if (k == "disable_any_whitespace") {
      c.disable_any_whitespace = boolean(k, v);
    } else if (k == "enable_in_reasoning") {
      c.enable_in_reasoning = boolean(k, v);
    } else if (k == "disable_fallback" || k == "disable_additional_properties") {
      boolean(k, v);  // no backend to fall back to; additionalProperties: guidance's
    } else if (k == "reasoning_parser") {
      const std::string name = string(k, v);
      if (name.empty()) continue;
      c.reasoning_parser = reasoning_format_from_name(name);
      if (!c.reasoning_parser)
        VT_THROW(kFlag, ": reasoning_parser '", name, "': expected qwen3 or deepseek_r1");
    } else if (k == "reasoning_parser_plugin") {
      if (!string(k, v).empty())
        VT_THROW(kFlag, ": reasoning_parser_plugin: plugins are not supported");
    } else {
      VT_THROW(kFlag, ": unknown key '", k, "' (expected backend, disable_fallback, ",
               "disable_any_whitespace, disable_additional_properties, reasoning_parser, ",
               "reasoning_parser_plugin, enable_in_reasoning)");
    }
  }
  return c;
}

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
      return cached(str_cat(
                        "json:", so.any_whitespace.value_or(true) ? "w:" : "c:", so.schema_json),
                    so.param, [&] {
                      return structured::parse_gbnf(
                          structured::json_schema_text_to_gbnf(so.schema_json, schema_options(so)));
                    });
    case Kind::kJsonObject:
      return cached(
          so.any_whitespace.value_or(true) ? "json_object:w" : "json_object:c", so.param,
          [&] { return structured::parse_gbnf(structured::json_object_gbnf(schema_options(so))); });
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
