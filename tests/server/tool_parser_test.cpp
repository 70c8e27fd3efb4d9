#include "server/tool_parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "server/chat_output.h"
#include "text/chat_template.h"

namespace vtllm::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string fixture_dir() {
  return std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/qwen3_5-tiny-vl";
}

const std::vector<ToolFunction>& weather_tools() {
  static const std::vector<ToolFunction> tools = {
      {"get_weather", R"({"type": "object", "properties": {
          "city": {"type": "string"}, "days": {"type": "integer"},
          "scale": {"type": "number"}, "flag": {"type": "boolean"},
          "units": {"type": "object"}, "tags": {"type": "array"},
          "note": {"type": "string"}, "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
          "label": {"type": ["string", "null"]}}})"},
      {"lookup", R"({"type": "object", "properties": {"query": {"type": "string"}}})"}};
  return tools;
}

// The assistant turn the real Qwen3.5 template renders for `calls` after `content`: the
// text a model trained on it generates after the prompt's "<think>\n".
std::string render_assistant_turn(const std::string& content, const ordered_json& calls) {
  const ChatTemplate t = ChatTemplate::from_dir(fixture_dir());
  ordered_json assistant = {{"role", "assistant"}, {"content", content}, {"tool_calls", calls}};
  const ordered_json req = {
      {"messages", ordered_json::array({{{"role", "user"}, {"content", "hi"}}, assistant})},
      {"add_generation_prompt", false}};
  const std::string text = t.render_request(req.dump());
  const std::string open = "<|im_start|>assistant\n<think>\n";
  const size_t at = text.rfind(open);
  EXPECT_NE(at, std::string::npos) << text;
  std::string turn = text.substr(at + open.size());
  const size_t end = turn.rfind("<|im_end|>");
  EXPECT_NE(end, std::string::npos) << text;
  return turn.substr(0, end);
}

// Feeds `text` in random pieces and reassembles what the stream carried.
struct Reassembled {
  std::string reasoning, content;
  std::vector<ToolCall> calls;
  bool ids_only_first = true;
};

Reassembled stream(const ChatOutputConfig& cfg, const std::string& text, uint32_t seed) {
  std::mt19937 rng(seed);
  StreamingChatOutputParser p(cfg);
  Reassembled r;
  size_t at = 0;
  auto absorb = [&](ChatOutputDelta d) {
    r.reasoning += d.reasoning;
    r.content += d.content;
    for (const ToolCallDelta& t : d.tool_calls) {
      if (size_t(t.index) == r.calls.size()) {
        EXPECT_FALSE(t.id.empty());
        EXPECT_FALSE(t.name.empty());
        r.calls.push_back(ToolCall{t.id, t.name, t.arguments});
      } else {
        ASSERT_LT(size_t(t.index), r.calls.size());
        if (!t.id.empty() || !t.name.empty()) r.ids_only_first = false;
        r.calls[size_t(t.index)].arguments += t.arguments;
      }
    }
  };
  while (at < text.size()) {
    const size_t n = std::min(text.size() - at, size_t(rng() % 7));
    absorb(p.feed(std::string_view(text).substr(at, n), false));
    at += n;
  }
  absorb(p.feed("", true));
  return r;
}

// The whole-text result and the streamed one agree, for many ways of cutting the text.
void expect_stream_matches(const ChatOutputConfig& cfg, const std::string& text) {
  const ChatOutput whole = parse_chat_output(cfg, text);
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const Reassembled r = stream(cfg, text, seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + " text: " + text);
    EXPECT_EQ(r.reasoning, whole.reasoning.value_or(""));
    EXPECT_EQ(r.content, whole.content.value_or(""));
    ASSERT_EQ(r.calls.size(), whole.tool_calls.size());
    for (size_t i = 0; i < r.calls.size(); ++i) {
      EXPECT_EQ(r.calls[i].name, whole.tool_calls[i].name);
      EXPECT_EQ(r.calls[i].arguments, whole.tool_calls[i].arguments);
    }
    EXPECT_TRUE(r.ids_only_first);
  }
}

TEST(ToolParser, ParsesCallsTheRealTemplateRenders) {
  const ordered_json args1 = {{"city", "Paris"},
                              {"days", 3},
                              {"scale", 2.5},
                              {"flag", true},
                              {"units", {{"t", "C"}, {"w", {1, 2}}}},
                              {"tags", {"a", "b"}},
                              {"note", "line one\nline two"},
                              {"maybe", nullptr}};
  const ordered_json args2 = {{"query", "café </parameter> \"quoted\""}};
  const ordered_json calls = ordered_json::array(
      {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", args1}}}},
       {{"type", "function"}, {"function", {{"name", "lookup"}, {"arguments", args2}}}}});
  const std::string turn = render_assistant_turn("Let me check.", calls);
  ASSERT_NE(turn.find("<function=get_weather>"), std::string::npos) << turn;

  ChatOutputConfig cfg;
  cfg.reasoning = ReasoningFormat::kQwen3;
  cfg.tool_calls = ToolCallFormat::kQwen3Coder;
  cfg.tools = weather_tools();
  const ChatOutput out = parse_chat_output(cfg, turn);
  EXPECT_EQ(out.reasoning.value_or(""), "\n");
  ASSERT_TRUE(out.content);
  EXPECT_EQ(*out.content, "\n\nLet me check.\n\n");
  ASSERT_EQ(out.tool_calls.size(), 2u);
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
  EXPECT_EQ(out.tool_calls[1].name, "lookup");
  // The template wrote the values as text (booleans as Python's "True", null as
  // "None"); the schema's types bring the values back.
  EXPECT_EQ(ordered_json::parse(out.tool_calls[0].arguments), args1) << out.tool_calls[0].arguments;
  EXPECT_EQ(ordered_json::parse(out.tool_calls[1].arguments), args2);
  // Python's json.dumps spacing, key order as written.
  EXPECT_EQ(out.tool_calls[1].arguments, R"({"query": "café </parameter> \"quoted\""})");
  EXPECT_EQ(out.tool_calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(out.tool_calls[0].id.size(), 5u + 24u);
  EXPECT_NE(out.tool_calls[0].id, out.tool_calls[1].id);
  expect_stream_matches(cfg, turn);
}

TEST(ToolParser, ConvertsValuesByTheSchemaAsVllm) {
  struct Case {
    const char* param;
    const char* value;
    json want;
  };
  const Case cases[] = {
      {"days", "42", 42},
      {"days", " -7 ", -7},
      {"days", "1_000", 1000},
      {"days", "4.5", "4.5"},
      {"days", "null", nullptr},
      {"days", "None", nullptr},
      {"scale", "2.0", 2},
      {"scale", "1e3", 1000},
      {"scale", "0.25", 0.25},
      {"scale", "abc", "abc"},
      {"flag", "TRUE", true},
      {"flag", "yes", false},
      {"city", "null", "null"},
      {"city", " 12 ", " 12 "},
      {"units", "{\"a\": 1}", {{"a", 1}}},
      {"units", "{bad", "{bad"},
      {"tags", "[1, \"x\"]", {1, "x"}},
      {"maybe", "None", nullptr},
      {"maybe", "5", 5},
      {"label", "none", nullptr},
      {"label", "text", "text"},
      {"unknown", "5", "5"},
  };
  for (const Case& c : cases) {
    const std::string text = std::string("<tool_call>\n<function=get_weather>\n<parameter=") +
                             c.param + ">\n" + c.value +
                             "\n</parameter>\n</function>\n</tool_call>";
    const ExtractedToolCalls out =
        extract_tool_calls(ToolCallFormat::kQwen3Coder, text, weather_tools());
    ASSERT_EQ(out.calls.size(), 1u) << text;
    EXPECT_EQ(json::parse(out.calls[0].arguments), json({{c.param, c.want}}))
        << c.param << " = " << c.value << " -> " << out.calls[0].arguments;
    EXPECT_FALSE(out.content);
  }
}

TEST(ToolParser, XmlEdgeCasesStreamAsTheyParse) {
  ChatOutputConfig cfg;
  cfg.tool_calls = ToolCallFormat::kQwen3Coder;
  cfg.tools = weather_tools();
  const std::string call =
      "<tool_call>\n<function=lookup>\n<parameter=query>\nx\n</parameter>\n</function>\n"
      "</tool_call>";
  struct Case {
    std::string text;
    std::string content;  // the whole-text content ("" = null with calls)
    size_t calls;
  };
  const Case cases[] = {
      {"plain answer, no call", "plain answer, no call", 0},
      {"Sure.\n\n" + call, "Sure.\n\n", 1},
      {call + "\n" + call, "", 2},
      {"I write <tool_call> in prose and go on.", "I write <tool_call> in prose and go on.", 0},
      {"prose <tool_call> then " + call, "prose <tool_call> then ", 1},
      // A truncated call still counts, closed at the end (vLLM's "<function=(.*)$").
      {"<tool_call>\n<function=lookup>\n<parameter=query>\npart", "", 1},
      // Missing </parameter>: the value runs to the structural </function>.
      {"<tool_call>\n<function=lookup>\n<parameter=query>\nv\n</function>\n</tool_call>", "", 1},
      // A name no function has ({{ }} from an unrendered template) is no call.
      {"<tool_call>\n<function={{ name }}>\n</function>\n</tool_call>",
       "<tool_call>\n<function={{ name }}>\n</function>\n</tool_call>", 0},
      // A legacy bare <function=...> without <tool_call>.
      {"<function=lookup>\n<parameter=query>\nq\n</parameter>\n</function>", "", 1},
      {"text after the call is dropped: " + call + " trailing",
       "text after the call is dropped: ", 1},
  };
  for (const Case& c : cases) {
    const ExtractedToolCalls out =
        extract_tool_calls(ToolCallFormat::kQwen3Coder, c.text, cfg.tools);
    EXPECT_EQ(out.calls.size(), c.calls) << c.text;
    EXPECT_EQ(out.content.value_or(""), c.content) << c.text;
    expect_stream_matches(cfg, c.text);
  }
  const ExtractedToolCalls trunc =
      extract_tool_calls(ToolCallFormat::kQwen3Coder,
                         "<tool_call>\n<function=lookup>\n<parameter=query>\npart", cfg.tools);
  ASSERT_EQ(trunc.calls.size(), 1u);
  EXPECT_EQ(trunc.calls[0].arguments, R"({"query": "part"})");
}

TEST(ToolParser, StreamsArgumentsBeforeTheCallEnds) {
  ChatOutputConfig cfg;
  cfg.tool_calls = ToolCallFormat::kQwen3Coder;
  cfg.tools = weather_tools();
  StreamingChatOutputParser p(cfg);
  ChatOutputDelta d = p.feed("Hi <tool_call>\n<function=get_weather>\n", false);
  EXPECT_EQ(d.content, "Hi ");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "get_weather");
  EXPECT_EQ(d.tool_calls[0].arguments, "{");
  // A value is complete once what follows its </parameter> shows it is structural.
  d = p.feed("<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n", false);
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_TRUE(d.tool_calls[0].id.empty());
  EXPECT_EQ(d.tool_calls[0].arguments, R"("city": "Paris")");
  d = p.feed("</function>\n</tool_call>", false);
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, R"(, "days": 2})");
  EXPECT_TRUE(p.feed("", true).empty());
  EXPECT_TRUE(p.called());
}

TEST(ToolParser, HermesCalls) {
  ChatOutputConfig cfg;
  cfg.tool_calls = ToolCallFormat::kHermes;
  // As Qwen3's template renders a call: '{"name": "' name '", "arguments": ' tojson '}'.
  const std::string call1 =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
      "\"days\": 3}}\n</tool_call>";
  const std::string call2 =
      "<tool_call>\n{\"name\":\"lookup\",\"arguments\":{\"query\":\"a\\u00e9\",\"n\":[1,2.5]}}\n"
      "</tool_call>";
  const std::string text = "Checking.\n" + call1 + "\n" + call2;
  const ExtractedToolCalls out = extract_tool_calls(ToolCallFormat::kHermes, text, {});
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.content.value_or(""), "Checking.\n");
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, R"({"city": "Paris", "days": 3})");
  EXPECT_EQ(out.calls[1].arguments, "{\"query\": \"a\xc3\xa9\", \"n\": [1, 2.5]}");
  expect_stream_matches(cfg, text);
  // A body that is not a call object is dropped; no call at all leaves the text.
  const std::string bad = "x <tool_call>\nnot json\n</tool_call>";
  const ExtractedToolCalls b = extract_tool_calls(ToolCallFormat::kHermes, bad, {});
  EXPECT_TRUE(b.calls.empty());
  EXPECT_EQ(b.content.value_or(""), bad);
  expect_stream_matches(cfg, bad);
  expect_stream_matches(cfg, "no calls <tool_ here");
}

// Hermes arguments stream as the JSON arrives: the call (id, name) once its name and the
// "arguments" key are read, then what each piece settles (a number once it ends).
TEST(ToolParser, HermesStreamsArgumentsAsTheJsonArrives) {
  ChatOutputConfig cfg;
  cfg.tool_calls = ToolCallFormat::kHermes;
  StreamingChatOutputParser p(cfg);
  ChatOutputDelta d = p.feed("Looking.<tool_call>\n{\"name\": \"lookup\", \"argu", false);
  EXPECT_EQ(d.content, "Looking.");
  EXPECT_TRUE(d.tool_calls.empty());
  d = p.feed("ments\": {\"query\":\"pa", false);
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "lookup");
  EXPECT_EQ(d.tool_calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(d.tool_calls[0].arguments, R"({"query": "pa)");
  d = p.feed("ris\\u00e9\",\"n\":1", false);
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_TRUE(d.tool_calls[0].id.empty());
  EXPECT_EQ(d.tool_calls[0].arguments, "ris\xc3\xa9\", \"n\": ");
  d = p.feed("2}}\n</tool_", false);
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, "12}");
  EXPECT_TRUE(p.feed("call>", false).empty());
  EXPECT_TRUE(p.feed("", true).empty());

  // Whole and streamed agree on varied spellings: spacing, escapes, arguments before
  // the name, other keys, nesting, several calls, a broken body before its name, a last
  // call without </tool_call>.
  const std::vector<std::string> texts = {
      "<tool_call>\n{\"arguments\": {\"a\": [1, 2.50, -0, 1E2, true, null]},\n "
      "\"name\": \"f\"}\n</tool_call>",
      "<tool_call>{ \"name\" :\"g\" , \"x\": {\"y\": [[]]}, \"arguments\" : "
      "{ \"s\" : \"\\ud83d\\ude00 \\\" \\\\ \\/ \\n\", \"e\": {} } }</tool_call>",
      "a<tool_call>\n{\"name\": \"h\", \"arguments\": \"{\\\"k\\\": 1}\"}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"i\", \"arguments\": {}}\n</tool_call>",
      "<tool_call>\n{\"nam oops}\n</tool_call><tool_call>{\"name\": \"j\", \"arguments\": "
      "{\"z\": \"caf\xc3\xa9\"}}</tool_call>",
      "<tool_call>\n{\"name\": \"k\", \"arguments\": {\"v\": 12345}}",
  };
  for (const std::string& t : texts) expect_stream_matches(cfg, t);
}

TEST(ToolParser, FormatNames) {
  EXPECT_EQ(tool_call_format_from_name("qwen3_coder"), ToolCallFormat::kQwen3Coder);
  EXPECT_EQ(tool_call_format_from_name("qwen3_xml"), ToolCallFormat::kQwen3Coder);
  EXPECT_EQ(tool_call_format_from_name("hermes"), ToolCallFormat::kHermes);
  EXPECT_FALSE(tool_call_format_from_name("mistral"));
}

}  // namespace
}  // namespace vtllm::server
