// tool_grammar.h: the grammars accept the calls the real chat templates render (Qwen3.5's
// XML through text::ChatTemplate on the checked-in template, Qwen3's hermes JSON from the
// Python-rendered fixture) and reject malformed ones.
#include "structured/tool_grammar.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "json_schema_test_gbnf.h"
#include "text/chat_template.h"

namespace vtllm::structured {
namespace {

using OJson = nlohmann::ordered_json;
using testing::RefGrammar;

const char* const kWeather = R"({"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14},
    "options": {"type": "object", "properties": {"hours": {"type": "array", "items": {"type": "integer"}}},
                "required": ["hours"]},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
  "required": ["city", "days"]})";

std::vector<ToolSpec> tools() {
  return {ToolSpec{"get_weather", OJson::parse(kWeather)},
          ToolSpec{"search",
                   OJson::parse(R"({"type": "object", "properties": {"query": {"type": "string"}},
                                               "required": ["query"]})")}};
}

// The assistant turn's calls as the Qwen3.5 template renders them.
std::string render_qwen3_5_calls(const std::string& tool_calls_json) {
  ChatTemplate t =
      ChatTemplate::from_dir(std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/qwen3_5-tiny-vl");
  std::string request = R"({"messages": [{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "", "tool_calls": )" +
                        tool_calls_json + R"(}],
      "add_generation_prompt": false})";
  std::string text = t.render_request(request);
  size_t assistant = text.find("<|im_start|>assistant\n");
  EXPECT_NE(assistant, std::string::npos) << text;
  size_t begin = text.find("<tool_call>", assistant), end = text.rfind("</tool_call>");
  EXPECT_NE(begin, std::string::npos) << text;
  return text.substr(begin, end + std::string("</tool_call>").size() - begin);
}

TEST(ToolGrammar, QwenXmlAcceptsWhatTheTemplateRenders) {
  ToolGrammarOptions o;
  o.format = ToolCallFormat::kQwenXml;
  auto ts = tools();
  RefGrammar one(tool_call_gbnf(ts, o));
  o.parallel = true;
  RefGrammar many(tool_call_gbnf(ts, o));
  std::string call1 = R"({"type": "function", "function": {"name": "get_weather", "arguments":
      {"city": "New York\nCity", "days": 3, "options": {"hours": [6, 18]}, "unit": "celsius"}}})";
  std::string call2 =
      R"({"type": "function", "function": {"name": "search", "arguments": {"query": "a < b"}}})";
  std::string one_call = render_qwen3_5_calls("[" + call1 + "]");
  EXPECT_EQ(
      one_call,
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\nCity\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=options>\n{\"hours\": [6, 18]}\n</parameter>\n"
      "<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>");
  EXPECT_TRUE(one.accepts(one_call));
  EXPECT_TRUE(many.accepts(one_call));
  std::string two = render_qwen3_5_calls("[" + call1 + ", " + call2 + "]");
  EXPECT_FALSE(one.accepts(two));
  EXPECT_TRUE(many.accepts(two)) << two;
  std::string minimal = render_qwen3_5_calls(
      R"([{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "x", "days": 14}}}])");
  EXPECT_TRUE(one.accepts(minimal)) << minimal;
}

TEST(ToolGrammar, QwenXmlRejectsMalformedCalls) {
  ToolGrammarOptions o;
  auto ts = tools();
  RefGrammar g(tool_call_gbnf(ts, o));
  const std::string head = "<tool_call>\n<function=get_weather>\n";
  const std::string tail = "</function>\n</tool_call>";
  auto param = [](const std::string& p, const std::string& v) {
    return "<parameter=" + p + ">\n" + v + "\n</parameter>\n";
  };
  EXPECT_TRUE(g.accepts(head + param("city", "Paris") + param("days", "2") + tail));
  EXPECT_FALSE(g.accepts(head + param("city", "Paris") + tail));  // days required
  EXPECT_FALSE(
      g.accepts(head + param("days", "2") + param("city", "Paris") + tail));  // schema order
  EXPECT_FALSE(g.accepts(head + param("city", "Paris") + param("days", "15") + tail));  // maximum
  EXPECT_FALSE(g.accepts(head + param("city", "Paris") + param("days", "\"2\"") +
                         tail));  // not JSON integer
  EXPECT_FALSE(g.accepts(head + param("city", "a</parameter>b") + param("days", "2") + tail));
  EXPECT_FALSE(
      g.accepts(head + param("city", "P") + param("days", "2") + param("unit", "kelvin") + tail));
  EXPECT_FALSE(g.accepts(head + param("city", "P") + param("days", "2") + param("x", "1") + tail));
  EXPECT_FALSE(g.accepts("<tool_call>\n<function=nope>\n" + tail));
  EXPECT_FALSE(
      g.accepts(head + param("city", "P") + param("days", "2") + "</function></tool_call>"));
  // Named choice: only that function.
  RefGrammar named(tool_call_gbnf(std::span<const ToolSpec>(ts).subspan(1, 1), o));
  EXPECT_TRUE(named.accepts("<tool_call>\n<function=search>\n" + param("query", "q") + tail));
  EXPECT_FALSE(named.accepts(head + param("city", "P") + param("days", "2") + tail));
}

TEST(ToolGrammar, HermesAcceptsTheQwen3Rendering) {
  std::ifstream in(std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/templates/expected/qwen3.json");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string rendered = nlohmann::json::parse(ss.str())["tool_call_object_args"]["output"];
  std::ifstream cin(std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/templates/conversations.json");
  OJson conv = OJson::parse(cin)["tool_call_object_args"];
  std::vector<ToolSpec> ts;
  for (const OJson& t : conv["tools"])
    ts.push_back({t["function"]["name"], t["function"]["parameters"]});
  size_t begin = rendered.find("<tool_call>", rendered.find("<|im_start|>assistant\n"));
  size_t end = rendered.find("</tool_call>", begin) + std::string("</tool_call>").size();
  std::string call = rendered.substr(begin, end - begin);
  ToolGrammarOptions o;
  o.format = ToolCallFormat::kHermesJson;
  RefGrammar g(tool_call_gbnf(ts, o));
  EXPECT_TRUE(g.accepts(call)) << call;
  EXPECT_TRUE(
      g.accepts("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                "{\"city\":\"Rome\"}}\n</tool_call>"));
  EXPECT_FALSE(
      g.accepts("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(g.accepts(
      "<tool_call>\n{\"name\": \"other\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>"));
  o.parallel = true;
  RefGrammar many(tool_call_gbnf(ts, o));
  EXPECT_TRUE(many.accepts(call + "\n" + call));
  EXPECT_FALSE(many.accepts(call + call));
}

TEST(ToolGrammar, ErrorsNameTheTool) {
  ToolGrammarOptions o;
  std::vector<ToolSpec> bad = {
      ToolSpec{"f", OJson::parse(R"({"properties": {"n": {"type": "number", "multipleOf": 3}}})")}};
  try {
    tool_call_gbnf(bad, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tool 'f'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("multipleOf"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tool_call_gbnf(std::vector<ToolSpec>{}, o), Error);
  EXPECT_THROW(tool_call_gbnf(std::vector<ToolSpec>{ToolSpec{"a>b", OJson::object()}}, o), Error);
  // No parameters: any parameter list in XML, any object in hermes.
  std::vector<ToolSpec> free = {ToolSpec{"ping", OJson()}};
  RefGrammar g(tool_call_gbnf(free, o));
  EXPECT_TRUE(g.accepts("<tool_call>\n<function=ping>\n</function>\n</tool_call>"));
  EXPECT_TRUE(g.accepts(
      "<tool_call>\n<function=ping>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>"));
}

}  // namespace
}  // namespace vtllm::structured
