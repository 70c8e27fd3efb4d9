// ChatTemplate's model-folder reading and apply_chat_template variables. The
// byte-exact comparison on real templates is in jinja_reference_test.cpp.
#include "text/chat_template.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace vtllm {
namespace {

namespace fs = std::filesystem;

class ChatTemplateDir : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vtllm_chat_template_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  fs::path dir_;
};

TEST_F(ChatTemplateDir, SpecialTokensMayBeAddedTokenDictsAndNullsStayUndefined) {
  write("tokenizer_config.json", R"({
    "bos_token": {"__type": "AddedToken", "content": "<BOS>", "lstrip": false},
    "eos_token": "<EOS>", "unk_token": null,
    "chat_template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}|{{ unk_token is defined }}|{{ tools }}|{{ documents }}|{{ add_generation_prompt }}"
  })");
  ChatTemplate t = ChatTemplate::from_dir(dir_.string());
  EXPECT_EQ(t.render_request(R"({"messages": [{"role": "user", "content": "hi"}]})"),
            "<BOS>hi<EOS>|False|None|None|True");
  EXPECT_EQ(t.render_request(R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": false})"),
            "<BOS>x<EOS>|False|None|None|False");
}

TEST_F(ChatTemplateDir, NamedTemplatesPickToolUseOnlyWithTools) {
  write("tokenizer_config.json", R"({"chat_template": [
    {"name": "default", "template": "plain"},
    {"name": "tool_use", "template": "tools:{{ tools|length }}"}]})");
  ChatTemplate t = ChatTemplate::from_dir(dir_.string());
  EXPECT_EQ(t.render_request(R"({"messages": []})"), "plain");
  EXPECT_EQ(t.render_request(R"({"messages": [], "tools": [{"type": "function"}]})"), "tools:1");
}

TEST_F(ChatTemplateDir, ChatTemplateJinjaFileWinsAndFlagOverridesBoth) {
  write("tokenizer_config.json", R"({"chat_template": "from config"})");
  write("chat_template.jinja", "from jinja file\n");
  write("other.jinja", "{{ greeting }} {{ enable_thinking }}");
  EXPECT_EQ(ChatTemplate::from_dir(dir_.string()).render_request(R"({"messages": []})"), "from jinja file");
  ChatTemplate t = ChatTemplate::from_dir(dir_.string(), (dir_ / "other.jinja").string());
  EXPECT_EQ(t.render_request(
                R"({"messages": [], "chat_template_kwargs": {"greeting": "hé", "enable_thinking": false}})"),
            "hé False");
}

TEST_F(ChatTemplateDir, ChatTemplateJsonComesBetweenTheJinjaFileAndTheConfig) {
  write("tokenizer_config.json", R"({"chat_template": "from config"})");
  write("chat_template.json", R"({"chat_template": "from json file"})");
  EXPECT_EQ(ChatTemplate::from_dir(dir_.string()).render_request(R"({"messages": []})"),
            "from json file");
  write("chat_template.jinja", "from jinja file");
  EXPECT_EQ(ChatTemplate::from_dir(dir_.string()).render_request(R"({"messages": []})"),
            "from jinja file");
  fs::remove(dir_ / "chat_template.jinja");
  write("chat_template.json", R"({"template": "wrong key"})");
  try {
    ChatTemplate::from_dir(dir_.string());
    ADD_FAILURE() << "a chat_template.json without chat_template was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chat_template.json"), std::string::npos) << e.what();
  }
}

TEST_F(ChatTemplateDir, MissingTemplateAndBadRequestsAreErrors) {
  write("tokenizer_config.json", R"({"eos_token": "x"})");
  EXPECT_THROW(ChatTemplate::from_dir(dir_.string()), Error);
  write("tokenizer_config.json", R"({"chat_template": "{{ messages|length }}"})");
  ChatTemplate t = ChatTemplate::from_dir(dir_.string());
  EXPECT_THROW(t.render_request("not json"), Error);
  EXPECT_THROW(t.render_request(R"({"messages": "text"})"), Error);
  EXPECT_THROW(t.render_request(R"({"messages": [], "chat_template_kwargs": {"messages": []}})"), Error);
  EXPECT_EQ(t.render_request(R"({"messages": [{}, {}]})"), "2");
}

TEST_F(ChatTemplateDir, KeywordArgumentsOverrideSpecialTokens) {
  write("tokenizer_config.json", R"({"bos_token": "<s>", "chat_template": "{{ bos_token }}"})");
  ChatTemplate t = ChatTemplate::from_dir(dir_.string());
  EXPECT_EQ(t.render_request(R"({"messages": []})"), "<s>");
  EXPECT_EQ(t.render_request(R"({"messages": [], "chat_template_kwargs": {"bos_token": "<B>"}})"), "<B>");
}

}  // namespace
}  // namespace vtllm
