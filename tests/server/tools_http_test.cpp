// tools, tool_choice, response_format, structured_outputs and the reasoning split:
// request validation (each error a 400 naming the field), what reaches the chat
// template, and the replies the tool and reasoning parsers shape, whole and streamed,
// from a fake model that writes a scripted Qwen3.5 tool-call turn.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "expect_api_error.h"
#include "server/protocol.h"
#include "structured/json_schema_validate.h"
#include "test_server.h"

namespace vtllm::server {
namespace {

using json = nlohmann::ordered_json;
using testing::ScriptedOutput;
using testing::TestServer;
using testing::TestServerOptions;

json weather_tool() {
  return {{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"description", "Weather for a city"},
            {"parameters",
             {{"type", "object"},
              {"properties", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}},
              {"required", {"city"}}}}}}};
}

json chat_body(json extra = json::object()) {
  json b = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
            {"max_tokens", 1000},
            {"temperature", 0}};
  for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
  return b;
}

ChatCompletionRequest parse(const json& body) { return parse_chat_completion_request(body.dump()); }

TEST(ToolsProtocol, ParsesToolsAndToolChoice) {
  ChatCompletionRequest r = parse(chat_body({{"tools", {weather_tool()}}}));
  ASSERT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tools[0].name, "get_weather");
  EXPECT_EQ(json::parse(r.tools[0].parameters_json), weather_tool()["function"]["parameters"]);
  EXPECT_EQ(r.tool_choice, ToolChoice::kAuto);  // the default with tools
  EXPECT_TRUE(r.parallel_tool_calls);
  // Key order as the client wrote it (the template's tojson shows it).
  EXPECT_EQ(r.tools_json, json::array({weather_tool()}).dump());

  EXPECT_EQ(parse(chat_body()).tool_choice, ToolChoice::kNone);
  EXPECT_EQ(parse(chat_body({{"tools", {weather_tool()}}, {"tool_choice", "none"}})).tool_choice,
            ToolChoice::kNone);
  EXPECT_EQ(
      parse(chat_body({{"tools", {weather_tool()}}, {"tool_choice", "required"}})).tool_choice,
      ToolChoice::kRequired);
  EXPECT_EQ(parse(chat_body({{"tools", json::array()}, {"tool_choice", "required"}})).tool_choice,
            ToolChoice::kNone);
  r = parse(
      chat_body({{"tools", {weather_tool()}},
                 {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
                 {"parallel_tool_calls", false}}));
  EXPECT_EQ(r.tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(r.tool_choice_name, "get_weather");
  EXPECT_FALSE(r.parallel_tool_calls);
}

TEST(ToolsProtocol, BadToolFieldsNameTheField) {
  EXPECT_API_ERROR(parse(chat_body({{"tools", "x"}})), 400, "tools", "invalid_type");
  EXPECT_API_ERROR(parse(chat_body({{"tools", {{{"type", "function"}}}}})), 400,
                   "tools[0].function", "missing_field");
  EXPECT_API_ERROR(parse(chat_body({{"tools", {{{"function", {{"description", "d"}}}}}}})), 400,
                   "tools[0].function.name", "missing_field");
  EXPECT_API_ERROR(
      parse(
          chat_body({{"tools", {{{"type", "code_interpreter"}, {"function", {{"name", "f"}}}}}}})),
      400, "tools[0].type", "unsupported");
  EXPECT_API_ERROR(parse(chat_body({{"tool_choice", "auto"}})), 400, "tool_choice",
                   "invalid_value");
  EXPECT_API_ERROR(parse(chat_body({{"tools", {weather_tool()}}, {"tool_choice", "sometimes"}})),
                   400, "tool_choice", "invalid_value");
  EXPECT_API_ERROR(
      parse(chat_body({{"tools", {weather_tool()}},
                       {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}})),
      400, "tool_choice", "invalid_value");
  EXPECT_API_ERROR(
      parse(chat_body({{"tools", {weather_tool()}}, {"tool_choice", {{"type", "function"}}}})), 400,
      "tool_choice.function", "invalid_value");
  EXPECT_API_ERROR(parse(chat_body({{"parallel_tool_calls", "yes"}})), 400, "parallel_tool_calls",
                   "invalid_type");
}

TEST(ToolsProtocol, AssistantToolCallsReachTheTemplateAsObjects) {
  json body = chat_body();
  body["messages"].push_back(
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls",
        {{{"id", "call_1"},
          {"type", "function"},
          {"function",
           {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\", \"days\": 2}"}}}}}}});
  body["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}});
  const ChatCompletionRequest r = parse(body);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_TRUE(r.messages[1].content_null);
  EXPECT_EQ(json::parse(r.messages[1].tool_calls_json)[0]["function"]["arguments"],
            json({{"city", "Paris"}, {"days", 2}}));
  EXPECT_EQ(r.messages[2].tool_call_id, "call_1");

  body["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{not json";
  EXPECT_API_ERROR(parse(body), 400, "messages[1].tool_calls[0].function.arguments",
                   "invalid_json");
}

TEST(ToolsProtocol, StructuredOutputFields) {
  const json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}};
  ChatCompletionRequest r = parse(
      chat_body({{"response_format",
                  {{"type", "json_schema"},
                   {"json_schema", {{"name", "s"}, {"schema", schema}, {"strict", true}}}}}}));
  ASSERT_TRUE(r.gen.structured);
  EXPECT_EQ(r.gen.structured->kind, StructuredOutput::Kind::kJson);
  EXPECT_TRUE(r.gen.structured->strict);
  EXPECT_EQ(nlohmann::json::parse(r.gen.structured->schema_json), nlohmann::json(schema));
  EXPECT_EQ(r.gen.structured->param, "response_format.json_schema.schema");
  // The client's key order is kept (the grammar lists properties in that order).
  const json ordered = {
      {"type", "object"},
      {"properties", {{"z", {{"type", "string"}}}, {"a", {{"type", "integer"}}}}}};
  EXPECT_EQ(
      parse(chat_body({{"structured_outputs", {{"json", ordered}}}})).gen.structured->schema_json,
      ordered.dump());
  EXPECT_EQ(parse(chat_body({{"guided_json", ordered.dump()}})).gen.structured->schema_json,
            ordered.dump());

  r = parse(chat_body({{"response_format", {{"type", "json_object"}}}}));
  EXPECT_EQ(r.gen.structured->kind, StructuredOutput::Kind::kJsonObject);
  EXPECT_FALSE(parse(chat_body({{"response_format", {{"type", "text"}}}})).gen.structured);

  r = parse(chat_body({{"structured_outputs", {{"choice", {"yes", "no"}}}}}));
  EXPECT_EQ(r.gen.structured->kind, StructuredOutput::Kind::kChoice);
  EXPECT_EQ(r.gen.structured->choices, (std::vector<std::string>{"yes", "no"}));
  r = parse(chat_body({{"structured_outputs", {{"regex", "[0-9]+"}}}}));
  EXPECT_EQ(r.gen.structured->regex, "[0-9]+");
  r = parse(chat_body({{"guided_json", schema.dump()}}));  // a schema's text works too
  EXPECT_EQ(r.gen.structured->kind, StructuredOutput::Kind::kJson);
  EXPECT_EQ(r.gen.structured->param, "guided_json");
  r = parse(chat_body({{"guided_grammar", "root ::= \"a\""}}));
  EXPECT_EQ(r.gen.structured->grammar, "root ::= \"a\"");
  // Completions take structured_outputs and the guided_* names too.
  const CompletionRequest c = parse_completion_request(
      json({{"prompt", "x"}, {"structured_outputs", {{"json_object", true}}}}).dump());
  EXPECT_EQ(c.gen.structured->kind, StructuredOutput::Kind::kJsonObject);

  EXPECT_API_ERROR(parse(chat_body({{"response_format", {{"type", "yaml"}}}})), 400,
                   "response_format.type", "unsupported");
  EXPECT_API_ERROR(parse(chat_body({{"response_format", {{"type", "json_schema"}}}})), 400,
                   "response_format.json_schema", "missing_field");
  EXPECT_API_ERROR(
      parse(chat_body(
          {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", schema}}}}}})),
      400, "response_format.json_schema.name", "missing_field");
  EXPECT_API_ERROR(parse(chat_body({{"structured_outputs", {{"regex", ""}}}})), 400,
                   "structured_outputs.regex", "invalid_type");
  EXPECT_API_ERROR(parse(chat_body({{"structured_outputs", {{"choice", json::array()}}}})), 400,
                   "structured_outputs.choice", "invalid_type");
  EXPECT_API_ERROR(parse(chat_body({{"structured_outputs", json::object()}})), 400,
                   "structured_outputs", "invalid_value");
  EXPECT_API_ERROR(parse(chat_body({{"structured_outputs", {{"regex", "a"}, {"choice", {"b"}}}}})),
                   400, "structured_outputs.choice", "invalid_value");
  EXPECT_API_ERROR(
      parse(chat_body({{"guided_regex", "a"}, {"response_format", {{"type", "json_object"}}}})),
      400, "response_format", "invalid_value");
  EXPECT_API_ERROR(parse(chat_body({{"guided_json", "{oops"}})), 400, "guided_json",
                   "invalid_json");
  EXPECT_API_ERROR(parse(chat_body({{"structured_outputs", {{"structural_tag", "x"}}}})), 400,
                   "structured_outputs.structural_tag", "unsupported");
  // JSON whitespace: the server's default unless the request says (compact on its word).
  EXPECT_FALSE(parse(chat_body({{"guided_json", schema.dump()}}))
                   .gen.structured->any_whitespace.has_value());
  EXPECT_EQ(parse(chat_body({{"structured_outputs",
                              {{"json", schema}, {"disable_any_whitespace", true}}}}))
                .gen.structured->any_whitespace,
            false);
  EXPECT_API_ERROR(parse(chat_body({{"structured_outputs",
                                     {{"json", schema}, {"disable_any_whitespace", "yes"}}}})),
                   400, "structured_outputs.disable_any_whitespace", "invalid_type");
  EXPECT_API_ERROR(
      parse(chat_body({{"structured_outputs", {{"regex", "a"}, {"whitespace_pattern", " *"}}}})),
      400, "structured_outputs.whitespace_pattern", "unsupported");
  // Options only, with response_format giving the constraint (vLLM merges the two).
  r = parse(chat_body({{"structured_outputs", {{"disable_any_whitespace", true}}},
                       {"response_format", {{"type", "json_object"}}}}));
  EXPECT_EQ(r.gen.structured->kind, StructuredOutput::Kind::kJsonObject);
  EXPECT_EQ(r.gen.structured->any_whitespace, false);
  EXPECT_API_ERROR(parse(chat_body({{"structured_outputs", {{"disable_any_whitespace", true}}}})),
                   400, "structured_outputs", "invalid_value");
}

// A TestServer whose fake model writes `turn` after the prompt of `body`.
struct Scripted {
  std::shared_ptr<ScriptedOutput> script = std::make_shared<ScriptedOutput>();
  std::unique_ptr<TestServer> server;

  Scripted(TestServerOptions o, const json& body, const std::string& turn) {
    o.script = script;
    server = std::make_unique<TestServer>(o);
    auto r = server->client()->Post("/tokenize", body.dump(), "application/json");
    EXPECT_EQ(r->status, 200) << r->body;
    script->ids = server->tokenizer().encode(turn, false);
    script->start = json::parse(r->body)["count"].get<int64_t>();
  }
};

// Room for the tools' system prompt (long in the tiny vocabulary), and the real
// Qwen3.5 template (the tiny model's own is Qwen3's).
TestServerOptions long_context() {
  TestServerOptions o;
  o.max_model_len = 4096;
  o.max_num_seqs = 4;
  o.chat_template_file =
      std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/qwen3_5-tiny-vl/chat_template.jinja";
  return o;
}

TestServerOptions parsers() {
  TestServerOptions o = long_context();
  o.tool_call_parser = ToolCallFormat::kQwen3Coder;
  o.enable_auto_tool_choice = true;
  o.reasoning_parser = ReasoningFormat::kQwen3;
  return o;
}

json post(TestServer& s, const std::string& path, const json& body, int want_status = 200) {
  auto r = s.client()->Post(path, body.dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, want_status) << r->body;
  return json::parse(r->body);
}

TEST(ToolsHttp, AutoToolChoiceNeedsTheFlags) {
  TestServer s(long_context());
  const json e = post(s, "/v1/chat/completions", chat_body({{"tools", {weather_tool()}}}), 400);
  EXPECT_EQ(e["error"]["param"], "tool_choice");
  EXPECT_EQ(e["error"]["message"],
            "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be "
            "set");
  // tool_choice none with tools: the template sees them, nothing is parsed.
  const json ok = post(s, "/v1/chat/completions",
                       chat_body({{"tools", {weather_tool()}}, {"tool_choice", "none"}}));
  EXPECT_FALSE(ok["choices"][0]["message"].contains("tool_calls"));
}

// The fake model's greedy choice is masked by each constraint: what comes back must
// satisfy it (checked by the schema validator, std::regex, the choice list, the tool
// parser). Thinking is off (the prompt ends the reasoning), so the constraint holds
// from the first token and the reply has no reasoning.
TEST(ToolsHttp, ConstrainedRepliesSatisfyTheirConstraint) {
  TestServer s(parsers());
  const auto chat_body = [](json extra = json::object()) {
    extra["chat_template_kwargs"] = {{"enable_thinking", false}};
    return ::vtllm::server::chat_body(extra);
  };
  const nlohmann::json schema = nlohmann::json::parse(R"({"type": "object",
      "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9},
                     "e": {"enum": ["x", "y"]}},
      "required": ["n", "e"], "additionalProperties": false})");
  auto text_of = [&](const json& body) {
    const json r = post(s, "/v1/chat/completions", body);
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
    EXPECT_FALSE(r["choices"][0]["message"].contains("reasoning")) << r.dump();
    return r["choices"][0]["message"]["content"].get<std::string>();
  };
  // Compact JSON (the request's disable_any_whitespace): the fake model's masked greedy
  // choice would otherwise pick whitespace tokens forever, as vLLM's default grammar
  // lets a model do.
  {
    const std::string out = text_of(
        chat_body({{"structured_outputs",
                    {{"json", json::parse(schema.dump())}, {"disable_any_whitespace", true}}}}));
    const nlohmann::json v = nlohmann::json::parse(out, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << out;
    EXPECT_FALSE(structured::validate_json_schema(v, schema)) << out;
  }
  const std::string re =
      text_of(chat_body({{"structured_outputs", {{"regex", "[ab]{1,3}c[0-9]"}}}}));
  EXPECT_TRUE(std::regex_match(re, std::regex("[ab]{1,3}c[0-9]"))) << re;
  const std::string ch = text_of(chat_body({{"guided_choice", {"yes", "no", "maybe"}}}));
  EXPECT_TRUE(ch == "yes" || ch == "no" || ch == "maybe") << ch;
  // Completions too (a prompt that ends the reasoning: constrained from the start).
  const json c = post(s, "/v1/completions",
                      json({{"prompt", "x</think>"},
                            {"max_tokens", 20},
                            {"temperature", 0},
                            {"guided_choice", {"alpha", "beta"}}}));
  const std::string ct = c["choices"][0]["text"];
  EXPECT_TRUE(ct == "alpha" || ct == "beta") << ct;

  // A named tool_choice forces a call of that tool with valid arguments.
  const json tool = {{"type", "function"},
                     {"function",
                      {{"name", "set_mode"},
                       {"parameters",
                        {{"type", "object"},
                         {"properties",
                          {{"mode", {{"enum", {"fast", "slow"}}}},
                           {"level", {{"type", "integer"}, {"minimum", 1}, {"maximum", 5}}}}},
                         {"required", {"mode", "level"}}}}}}};
  const json named =
      chat_body({{"tools", {tool, weather_tool()}},
                 {"tool_choice", {{"type", "function"}, {"function", {{"name", "set_mode"}}}}}});
  const json r = post(s, "/v1/chat/completions", named);
  const json& m = r["choices"][0]["message"];
  ASSERT_EQ(m["tool_calls"].size(), 1u) << r.dump();
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "set_mode");
  const nlohmann::json args =
      nlohmann::json::parse(m["tool_calls"][0]["function"]["arguments"].get<std::string>());
  EXPECT_FALSE(structured::validate_json_schema(
      args, nlohmann::json::parse(tool["function"]["parameters"].dump())))
      << args.dump();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");

  // An unsupported schema is a 400 naming the field and the keyword.
  const json bad = post(
      s, "/v1/chat/completions",
      chat_body({{"structured_outputs", {{"json", {{"type", "integer"}, {"multipleOf", 2}}}}}}),
      400);
  EXPECT_EQ(bad["error"]["param"], "structured_outputs.json");
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("multipleOf"), std::string::npos);
  // A forced call needs the calls' format.
  TestServer plain(long_context());
  const json np = post(plain, "/v1/chat/completions",
                       chat_body({{"tools", {weather_tool()}}, {"tool_choice", "required"}}), 400);
  EXPECT_EQ(np["error"]["param"], "tool_choice");
}

// vLLM's default JSON grammar (xgrammar's any_whitespace): a reply spaced over lines
// passes the mask unchanged, through response_format and guided_json alike; the same
// text with an undeclared key is cut where the key would start (strict mode).
TEST(ToolsHttp, JsonConstraintsTakeAnyWhitespaceAndNoExtraKeys) {
  const json schema = json::parse(R"({"type": "object",
      "properties": {"n": {"type": "integer"}, "e": {"enum": ["x", "y"]}},
      "required": ["n"]})");
  const std::string pretty = "{\n  \"n\": 3,\n\t\"e\" : \"x\"\n}";
  const json off = {{"enable_thinking", false}};
  for (const json& body :
       {chat_body({{"chat_template_kwargs", off},
                   {"response_format",
                    {{"type", "json_schema"},
                     {"json_schema", {{"name", "s"}, {"schema", schema}, {"strict", false}}}}}}),
        chat_body({{"chat_template_kwargs", off}, {"guided_json", schema.dump()}})}) {
    Scripted sc(parsers(), body, pretty);
    const json r = post(*sc.server, "/v1/chat/completions", body);
    EXPECT_EQ(r["choices"][0]["message"]["content"], pretty) << r.dump();
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  }
  // An undeclared key: after "n": 3 only "e" or the end may come.
  const json body =
      chat_body({{"chat_template_kwargs", off},
                 {"structured_outputs", {{"json", schema}, {"disable_any_whitespace", true}}}});
  Scripted sc(parsers(), body, R"({"n": 3, "z": 1})");
  const json r = post(*sc.server, "/v1/chat/completions", body);
  const std::string out = r["choices"][0]["message"]["content"];
  EXPECT_TRUE(out.starts_with(R"({"n": 3)")) << out;
  EXPECT_EQ(out.find("\"z\""), std::string::npos) << out;
  const nlohmann::json v = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(v.is_discarded()) << out;
  EXPECT_FALSE(structured::validate_json_schema(
      v, nlohmann::json::parse(R"({"type": "object", "properties": {"n": {"type": "integer"},
          "e": {"enum": ["x", "y"]}}, "required": ["n"], "additionalProperties": false})")))
      << out;
}

// Thinking on: the reasoning is free and the constraint starts after </think> (vLLM's
// order). The fake model writes the scripted reasoning and </think>, then only stop
// tokens, which the mask turns into the constrained reply; whole and streamed, the
// reasoning is the script's and the content satisfies the constraint. A completions
// prompt without tags leaves the reasoning open too (vLLM's is_reasoning_end on the
// prompt ids), so its text is the script's, then a choice.
TEST(ToolsHttp, ConstraintsStartAfterTheReasoning) {
  const json schema = json::parse(R"({"type": "object",
      "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9},
                     "e": {"enum": ["x", "y"]}},
      "required": ["n", "e"]})");
  const std::string thought = "Think: no <tool_call> yet, {not json}.\n";
  // Compact JSON: the fake model's masked greedy choice would pick whitespace forever.
  const json body =
      chat_body({{"structured_outputs", {{"json", schema}, {"disable_any_whitespace", true}}}});
  Scripted sc(parsers(), body, thought + "</think>");
  const json r = post(*sc.server, "/v1/chat/completions", body);
  const json& m = r["choices"][0]["message"];
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
  EXPECT_EQ(m["reasoning"], thought) << r.dump();
  const std::string content = m["content"];
  const nlohmann::json v = nlohmann::json::parse(content, nullptr, false);
  ASSERT_FALSE(v.is_discarded()) << content;
  EXPECT_FALSE(structured::validate_json_schema(v, nlohmann::json::parse(schema.dump())))
      << content;
  EXPECT_EQ(v.size(), 2u) << content;  // strict, as vLLM: no undeclared key

  json sbody = body;
  sbody["stream"] = true;
  auto sr = sc.server->client()->Post("/v1/chat/completions", sbody.dump(), "application/json");
  ASSERT_TRUE(sr);
  std::string reasoning, streamed;
  for (size_t at = 0; (at = sr->body.find("data: ", at)) != std::string::npos;) {
    const size_t end = sr->body.find("\n\n", at);
    const std::string ev = sr->body.substr(at + 6, end - at - 6);
    at = end;
    if (ev == "[DONE]") break;
    const json d = json::parse(ev)["choices"][0]["delta"];
    if (d.contains("reasoning")) reasoning += d["reasoning"].get<std::string>();
    if (d.contains("content")) streamed += d["content"].get<std::string>();
  }
  EXPECT_EQ(reasoning, thought);
  EXPECT_EQ(streamed, content);

  // A named tool under reasoning: the call follows </think>.
  const json tool = {{"type", "function"},
                     {"function",
                      {{"name", "set_mode"},
                       {"parameters",
                        {{"type", "object"},
                         {"properties", {{"mode", {{"enum", {"fast", "slow"}}}}}},
                         {"required", {"mode"}}}}}}};
  const json named =
      chat_body({{"tools", {tool}},
                 {"tool_choice", {{"type", "function"}, {"function", {{"name", "set_mode"}}}}}});
  Scripted tc(parsers(), named, thought + "</think>");
  const json t = post(*tc.server, "/v1/chat/completions", named);
  EXPECT_EQ(t["choices"][0]["message"]["reasoning"], thought) << t.dump();
  ASSERT_EQ(t["choices"][0]["message"]["tool_calls"].size(), 1u) << t.dump();
  const json args = json::parse(
      t["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(args == json({{"mode", "fast"}}) || args == json({{"mode", "slow"}})) << args;
  EXPECT_EQ(t["choices"][0]["finish_reason"], "tool_calls");

  // Completions: the prompt has no tags, so the reasoning is open until </think>.
  TestServerOptions o = parsers();
  auto script = std::make_shared<ScriptedOutput>();
  o.script = script;
  TestServer cs(o);
  const std::string prompt = "Answer:";
  script->ids = cs.tokenizer().encode("free words </think>", false);
  script->start = int64_t(cs.tokenizer().encode(prompt, true).size());
  const json c = post(cs, "/v1/completions",
                      json({{"prompt", prompt},
                            {"max_tokens", 40},
                            {"temperature", 0},
                            {"guided_choice", {"alpha", "beta"}}}));
  const std::string text = c["choices"][0]["text"];
  EXPECT_TRUE(text == "free words </think>alpha" || text == "free words </think>beta") << text;
  EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");

  // Prompts of one request that differ in the gate, each decided on its own ids (vLLM
  // runs each prompt as a request of its own): token-id prompts of equal length, one
  // ending the reasoning, one with the </think> swapped for other text.
  std::vector<int32_t> closed = cs.tokenizer().encode("<think>\n\n</think>\n\nAnswer:", false);
  std::vector<int32_t> open = closed;
  const std::vector<int32_t> end_tag = cs.tokenizer().encode("</think>", false);
  ASSERT_EQ(end_tag.size(), 1u);
  const auto at = std::find(open.begin(), open.end(), end_tag[0]);
  ASSERT_NE(at, open.end());
  *at = cs.tokenizer().encode("x", false)[0];
  script->start = int64_t(closed.size());
  const json mixed = post(cs, "/v1/completions",
                          json({{"prompt", {closed, open}},
                                {"max_tokens", 40},
                                {"temperature", 0},
                                {"guided_choice", {"alpha", "beta"}}}));
  ASSERT_EQ(mixed["choices"].size(), 2u) << mixed.dump();
  for (const json& ch : mixed["choices"]) {
    const std::string t = ch["text"];
    if (ch["index"] == 0)
      EXPECT_TRUE(t == "alpha" || t == "beta") << t;
    else
      EXPECT_TRUE(t == "free words </think>alpha" || t == "free words </think>beta") << t;
    EXPECT_EQ(ch["finish_reason"], "stop") << mixed.dump();
  }
}

// --structured-outputs-config: enable_in_reasoning drops the gate (the choice is the whole
// text although the prompt leaves the reasoning open); disable_any_whitespace makes a
// request that does not say compact (the fake model's masked greedy choice would pick
// whitespace until max_tokens), while the request's own field still wins.
TEST(ToolsHttp, StructuredOutputsConfigSetsTheServerDefaults) {
  TestServerOptions o = parsers();
  o.structured_outputs.enable_in_reasoning = true;
  o.structured_outputs.disable_any_whitespace = true;
  TestServer s(o);
  const json c = post(s, "/v1/completions",
                      json({{"prompt", "Answer:"},
                            {"max_tokens", 40},
                            {"temperature", 0},
                            {"guided_choice", {"alpha", "beta"}}}));
  const std::string text = c["choices"][0]["text"];
  EXPECT_TRUE(text == "alpha" || text == "beta") << text;

  const json schema = json::parse(R"({"type": "object",
      "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"]})");
  const json compact = post(
      s, "/v1/completions",
      json({{"prompt", "Answer:"},
            {"max_tokens", 40},
            {"temperature", 0},
            {"response_format",
             {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", schema}}}}}}));
  EXPECT_EQ(compact["choices"][0]["finish_reason"], "stop") << compact.dump();
  const json v = json::parse(compact["choices"][0]["text"].get<std::string>(), nullptr, false);
  EXPECT_TRUE(v.is_object() && v.contains("n")) << compact.dump();
  const json spaced =
      post(s, "/v1/completions",
           json({{"prompt", "Answer:"},
                 {"max_tokens", 40},
                 {"temperature", 0},
                 {"structured_outputs", {{"json", schema}, {"disable_any_whitespace", false}}}}));
  EXPECT_EQ(spaced["choices"][0]["finish_reason"], "length") << spaced.dump();
}

TEST(ToolsHttp, StructuredOutputsConfigParsesVllmsKeys) {
  const StructuredOutputsConfig c = parse_structured_outputs_config(
      R"({"backend": "xgrammar", "disable_fallback": true, "disable_any_whitespace": true,
          "disable_additional_properties": false, "reasoning_parser": "deepseek_r1",
          "reasoning_parser_plugin": "", "enable_in_reasoning": true})");
  EXPECT_TRUE(c.disable_any_whitespace);
  EXPECT_TRUE(c.enable_in_reasoning);
  EXPECT_EQ(c.reasoning_parser, ReasoningFormat::kDeepSeekR1);
  const StructuredOutputsConfig d = parse_structured_outputs_config("{}");
  EXPECT_FALSE(d.disable_any_whitespace || d.enable_in_reasoning || d.reasoning_parser);
  const auto error_of = [](const char* text) {
    try {
      parse_structured_outputs_config(text);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(R"({"backend": "guidance"})").find("backend 'guidance'"), std::string::npos);
  EXPECT_NE(error_of(R"({"disable_any_whitespace": "yes"})").find("'disable_any_whitespace'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"whitespace": true})").find("unknown key 'whitespace'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"reasoning_parser": "granite"})").find("'granite'"), std::string::npos);
  EXPECT_NE(error_of(R"({"reasoning_parser_plugin": "p.py"})").find("plugins"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("JSON object"), std::string::npos);
  EXPECT_NE(error_of("{").find("not JSON"), std::string::npos);
}
TEST(ToolsHttp, ToolsAndThinkingSwitchReachTheTemplate) {
  TestServer s(long_context());
  auto prompt_of = [&](const json& body) {
    const json t = post(s, "/tokenize", body);
    return s.tokenizer().decode(t["tokens"].get<std::vector<int32_t>>(), false);
  };
  const std::string with_tools = prompt_of(chat_body({{"tools", {weather_tool()}}}));
  // The Qwen3.5 template writes each tool with tojson, in the client's key order.
  EXPECT_NE(with_tools.find("# Tools"), std::string::npos) << with_tools;
  EXPECT_NE(with_tools.find(R"({"type": "function", "function": {"name": "get_weather", )"
                            R"("description": "Weather for a city", "parameters": )"),
            std::string::npos)
      << with_tools;
  const std::string thinking = prompt_of(chat_body());
  EXPECT_TRUE(thinking.ends_with("<|im_start|>assistant\n<think>\n")) << thinking;
  const std::string no_thinking =
      prompt_of(chat_body({{"chat_template_kwargs", {{"enable_thinking", false}}}}));
  EXPECT_TRUE(no_thinking.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"))
      << no_thinking;
}

const std::string kTurn =
    "The user wants weather.\n</think>\n\nChecking.\n\n<tool_call>\n<function=get_weather>\n"
    "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n"
    "</tool_call>";

TEST(ToolsHttp, ReplyCarriesReasoningAndToolCalls) {
  const json body = chat_body({{"tools", {weather_tool()}}});
  Scripted sc(parsers(), body, kTurn);
  const json r = post(*sc.server, "/v1/chat/completions", body);
  const json& c = r["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  const json& m = c["message"];
  EXPECT_EQ(m["reasoning"], "The user wants weather.\n");
  EXPECT_EQ(m["reasoning_content"], m["reasoning"]);
  EXPECT_EQ(m["content"], "\n\nChecking.\n\n");
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  const json& call = m["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(call["function"]["arguments"], R"({"city": "Paris", "days": 3})");
}

TEST(ToolsHttp, StreamedDeltasReassembleToTheReply) {
  const json body = chat_body({{"tools", {weather_tool()}}});
  Scripted sc(parsers(), body, kTurn);
  json sbody = body;
  sbody["stream"] = true;
  auto r = sc.server->client()->Post("/v1/chat/completions", sbody.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::string reasoning, content, name, args, id, finish;
  int header_deltas = 0;
  size_t at = 0;
  while ((at = r->body.find("data: ", at)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", at);
    const std::string ev = r->body.substr(at + 6, end - at - 6);
    at = end;
    if (ev == "[DONE]") break;
    const json c = json::parse(ev)["choices"][0];
    const json& d = c["delta"];
    if (d.contains("reasoning")) {
      reasoning += d["reasoning"].get<std::string>();
      EXPECT_EQ(d["reasoning_content"], d["reasoning"]);
    }
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("tool_calls")) {
      for (const json& t : d["tool_calls"]) {
        EXPECT_EQ(t["index"], 0);
        if (t.contains("id")) {
          ++header_deltas;
          id = t["id"];
          name = t["function"]["name"];
          EXPECT_EQ(t["type"], "function");
        } else {
          EXPECT_FALSE(t["function"].contains("name"));
        }
        args += t["function"]["arguments"].get<std::string>();
      }
    }
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_EQ(header_deltas, 1);
  EXPECT_EQ(id.rfind("call_", 0), 0u);
  EXPECT_EQ(reasoning, "The user wants weather.\n");
  EXPECT_EQ(content, "\n\nChecking.\n\n");
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(args, R"({"city": "Paris", "days": 3})");
  EXPECT_EQ(finish, "tool_calls");
}

TEST(ToolsHttp, ThinkingOffLeavesTheOutputContent) {
  json body = chat_body({{"chat_template_kwargs", {{"enable_thinking", false}}}});
  Scripted sc(parsers(), body, "Plain </think> answer.");
  const json r = post(*sc.server, "/v1/chat/completions", body);
  const json& m = r["choices"][0]["message"];
  EXPECT_EQ(m["content"], "Plain </think> answer.");
  EXPECT_FALSE(m.contains("reasoning"));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
}

}  // namespace
}  // namespace vtllm::server
