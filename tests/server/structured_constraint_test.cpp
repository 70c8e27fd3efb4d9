// StructuredCompiler + GrammarConstraint over the tiny model's real vocabulary: text
// sampled token by token under the mask (a seeded random walk over the allowed ids)
// must be accepted by an independent check — the JSON Schema validator, std::regex,
// the choice list, and for forced tool calls the tool parser with the arguments
// validated against the tool's schema.
#include "server/structured_constraint.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "expect_api_error.h"
#include "structured/json_schema_validate.h"
#include "structured/matcher.h"
#include "text/tokenizer.h"

namespace vtllm::server {
namespace {

const text::Tokenizer& tokenizer() {
  static const text::Tokenizer t =
      text::Tokenizer::from_dir(std::string(VTLLM_SOURCE_DIR) + "/models/tiny-qwen3.5");
  return t;
}

StructuredCompiler& compiler() {
  static StructuredCompiler c(tokenizer(), 0, {4098});
  return c;
}

// Walks the grammar: each step takes the stop token when allowed (after 8 steps), else
// a closing quote or bracket when one is allowed (3 times in 5), else a random allowed
// id. Returns the text; fails when no end comes within `cap` tokens.
std::string walk(std::shared_ptr<const structured::CompiledGrammar> g, uint32_t seed,
                 size_t cap = 600) {
  GrammarConstraint c(std::move(g));
  std::mt19937 rng(seed);
  std::vector<uint32_t> words(compiler().vocab().mask_words());
  std::vector<int32_t> ids;
  for (size_t step = 0; step < cap && !c.terminated(); ++step) {
    c.fill_bitmask(words);
    std::vector<int32_t> allowed;
    for (size_t t = 0; t < compiler().vocab().size(); ++t)
      if (words[t / 32] >> (t % 32) & 1u) allowed.push_back(int32_t(t));
    EXPECT_FALSE(allowed.empty()) << "dead end after " << ids.size() << " tokens";
    if (allowed.empty()) break;
    int32_t pick = allowed[rng() % allowed.size()];
    std::vector<int32_t> closers;  // single-byte tokens that end a string, object or array
    for (int32_t t : allowed) {
      const std::string_view b = compiler().vocab().bytes(t);
      if (b == "\"" || b == "}" || b == "]") closers.push_back(t);
    }
    if (std::find(allowed.begin(), allowed.end(), 4098) != allowed.end() && step > 8)
      pick = 4098;
    else if (!closers.empty() && rng() % 5 < 3)
      pick = closers[rng() % closers.size()];
    EXPECT_TRUE(c.accept(pick));
    if (pick != 4098) ids.push_back(pick);
  }
  EXPECT_TRUE(c.terminated()) << "no end within " << cap << " tokens";
  return tokenizer().decode(ids, false);
}

TEST(StructuredConstraint, JsonSchemaOutputsValidate) {
  const nlohmann::json schema = nlohmann::json::parse(R"({
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 12},
                   "age": {"type": "integer", "minimum": 0, "maximum": 150},
                   "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
    "required": ["name", "age"]})");
  StructuredOutput so;
  so.schema_json = schema.dump();
  so.param = "response_format.json_schema.schema";
  const auto g = compiler().compile(so);
  EXPECT_EQ(g, compiler().compile(so));  // cached by its text
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    const std::string text = walk(g, seed);
    const nlohmann::json v = nlohmann::json::parse(text, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << text;
    const auto bad = structured::validate_json_schema(v, schema);
    EXPECT_FALSE(bad) << text << ": " << (bad ? bad->message : "");
    for (auto it = v.begin(); it != v.end(); ++it)  // strict: declared keys only
      EXPECT_TRUE(schema["properties"].contains(it.key())) << text;
  }
  // vLLM's defaults (xgrammar strict_mode and any_whitespace): no undeclared key, any run
  // of space, tab or newline between tokens (not \r), none around the value; the
  // request's `strict` changes nothing. (`schema` is a sorted nlohmann::json: properties
  // come as age, name, tags.)
  const auto takes = [&](const std::string& text) {
    structured::Matcher m(g);
    return m.accept_bytes(text) && m.can_terminate();
  };
  EXPECT_TRUE(takes("{\n  \"age\" : 1,\t\"name\":\"x\" }"));
  EXPECT_TRUE(takes(R"({"age":1,"name":"x","tags":[ "a" ,"b"]})"));
  EXPECT_FALSE(takes(R"({"age":1,"name":"x","z":1})"));
  EXPECT_FALSE(takes("{\r\n\"age\":1,\"name\":\"x\"}"));
  EXPECT_FALSE(takes(" {\"age\":1,\"name\":\"x\"}"));
  so.any_whitespace = false;  // structured_outputs.disable_any_whitespace
  const auto compact = compiler().compile(so);
  EXPECT_NE(compact, g);
  structured::Matcher m(compact);
  EXPECT_FALSE(m.accept_bytes("{\n\"age\":1"));
  EXPECT_TRUE(m.accept_bytes(R"({"age": 1, "name":"x"})"));
  so.any_whitespace = true;
  so.strict = true;
  EXPECT_EQ(compiler().compile(so), g);
}

TEST(StructuredConstraint, RegexChoiceAndJsonObject) {
  StructuredOutput re;
  re.kind = StructuredOutput::Kind::kRegex;
  re.regex = "[a-c]{2,4}-[0-9]+";
  StructuredOutput choice;
  choice.kind = StructuredOutput::Kind::kChoice;
  choice.choices = {"yes", "no", "maybe so"};
  StructuredOutput obj;
  obj.kind = StructuredOutput::Kind::kJsonObject;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    const std::string r = walk(compiler().compile(re), seed);
    EXPECT_TRUE(std::regex_match(r, std::regex(re.regex))) << r;
    const std::string c = walk(compiler().compile(choice), seed);
    EXPECT_NE(std::find(choice.choices.begin(), choice.choices.end(), c), choice.choices.end())
        << c;
    const nlohmann::json o =
        nlohmann::json::parse(walk(compiler().compile(obj), seed), nullptr, false);
    EXPECT_TRUE(o.is_object()) << o.dump();
  }
}

// Non-special added tokens are their text (Qwen's <tool_call>, </think>), so a forced
// call can open with the <tool_call> token the model was trained to write; special ones
// (<|im_start|>) never match text.
TEST(StructuredConstraint, NonSpecialAddedTokensMatchTheirText) {
  const structured::TokenVocab& v = compiler().vocab();
  const int32_t call = *tokenizer().token_to_id("<tool_call>");
  EXPECT_EQ(v.bytes(call), "<tool_call>");
  EXPECT_EQ(v.bytes(*tokenizer().token_to_id("</think>")), "</think>");
  EXPECT_EQ(v.bytes(*tokenizer().token_to_id("<|im_start|>")), "");
  const std::vector<ToolFunction> tools = {{"f", R"({"type": "object"})"}};
  for (ToolCallFormat f : {ToolCallFormat::kQwen3Coder, ToolCallFormat::kHermes}) {
    GrammarConstraint c(compiler().compile_tool_call(tools, "", false, f));
    std::vector<uint32_t> words(v.mask_words());
    c.fill_bitmask(words);
    EXPECT_TRUE(words[size_t(call) / 32] >> (call % 32) & 1u);
    EXPECT_TRUE(c.accept(call));
  }
}

TEST(StructuredConstraint, ForcedToolCallsParseWithValidArguments) {
  const std::vector<ToolFunction> tools = {
      {"get_weather", R"({"type": "object", "properties": {"city": {"type": "string",
        "maxLength": 10}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city", "days"]})"},
      {"lookup", R"({"type": "object", "properties": {"q": {"type": "string", "maxLength": 8}},
        "required": ["q"]})"}};
  for (ToolCallFormat f : {ToolCallFormat::kQwen3Coder, ToolCallFormat::kHermes}) {
    for (const std::string name : {"", "lookup"}) {
      const auto g = compiler().compile_tool_call(tools, name, false, f);
      for (uint32_t seed = 1; seed <= 4; ++seed) {
        const std::string text = walk(g, seed);
        const ExtractedToolCalls out = extract_tool_calls(f, text, tools);
        ASSERT_EQ(out.calls.size(), 1u) << text;
        if (!name.empty()) {
          EXPECT_EQ(out.calls[0].name, name);
        }
        const ToolFunction& t = out.calls[0].name == "lookup" ? tools[1] : tools[0];
        const auto bad =
            structured::validate_json_schema(nlohmann::json::parse(out.calls[0].arguments),
                                             nlohmann::json::parse(t.parameters_json));
        EXPECT_FALSE(bad) << text << " -> " << out.calls[0].arguments;
      }
    }
  }
}

// after_reasoning per prompt: a prompt that ended the reasoning gets the grammar from its
// first token; an open one (or one without tags) gets every token until </think>, which
// is free, then the grammar. One factory serves prompts that differ in this.
TEST(StructuredConstraint, AfterReasoningGatesPerPrompt) {
  StructuredOutput so;
  so.kind = StructuredOutput::Kind::kChoice;
  so.choices = {"yes", "no"};
  const auto g = compiler().compile(so);
  const ReasoningTokenIds tags = *reasoning_token_ids(tokenizer());
  const auto ids = [](const char* text) { return tokenizer().encode(text, false); };
  const std::vector<int32_t> closed = ids("<think>\n\n</think>\n\n"),
                             open = ids("<|im_start|>assistant\n<think>\n"), none = ids("Answer:");
  const size_t n = compiler().vocab().mask_words();
  std::vector<uint32_t> grammar_mask(n), mask(n);
  GrammarConstraint(g).fill_bitmask(grammar_mask);
  const std::vector<uint32_t> all(n, ~0u);
  ASSERT_NE(grammar_mask, all);

  const engine::ConstraintFactory gated = after_reasoning(StructuredCompiler::factory(g), tags);
  gated(closed)->fill_bitmask(mask);
  EXPECT_EQ(mask, grammar_mask);

  for (const auto& p : {open, none}) {
    auto c = gated(p);
    for (int32_t t : ids("free text, even no")) {
      c->fill_bitmask(mask);
      EXPECT_EQ(mask, all);
      EXPECT_TRUE(c->accept(t));
      EXPECT_FALSE(c->terminated());
    }
    c->fill_bitmask(mask);
    EXPECT_TRUE(c->accept(tags.end));
    c->fill_bitmask(mask);
    EXPECT_EQ(mask, grammar_mask);
    for (int32_t t : ids("no")) EXPECT_TRUE(c->accept(t));
    EXPECT_FALSE(c->accept(ids("x")[0]));
    EXPECT_TRUE(c->accept(4098));
    EXPECT_TRUE(c->terminated());
  }
  // The closed prompt after the open ones: still constrained from its first token.
  gated(closed)->fill_bitmask(mask);
  EXPECT_EQ(mask, grammar_mask);
}

TEST(StructuredConstraint, UnsupportedSchemasAreA400NamingTheField) {
  StructuredOutput so;
  so.schema_json = R"({"type": "integer", "multipleOf": 3})";
  so.param = "structured_outputs.json";
  try {
    compiler().compile(so);
    ADD_FAILURE() << "multipleOf compiled";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "structured_outputs.json");
    EXPECT_NE(std::string(e.what()).find("multipleOf"), std::string::npos) << e.what();
  }
  StructuredOutput g;
  g.kind = StructuredOutput::Kind::kGrammar;
  g.grammar = "root ::= (";
  g.param = "structured_outputs.grammar";
  EXPECT_API_ERROR(compiler().compile(g), 400, "structured_outputs.grammar", "invalid_value");
}

}  // namespace
}  // namespace vtllm::server
