#include "server/reasoning_parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "server/chat_output.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace vtllm::server {
namespace {

struct Case {
  std::string text;
  std::optional<std::string> reasoning, content;
};

// Streams `text` in random pieces; the pieces concatenate to the whole-text split.
void expect_stream_matches(ReasoningFormat f, const std::string& text) {
  const ReasoningSplit whole = extract_reasoning(f, text);
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    StreamingReasoningParser p(f);
    std::string r, c;
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min(text.size() - at, size_t(rng() % 6));
      ReasoningDelta d = p.feed(std::string_view(text).substr(at, n), false);
      r += d.reasoning;
      c += d.content;
      at += n;
    }
    ReasoningDelta d = p.feed("", true);
    r += d.reasoning;
    c += d.content;
    EXPECT_EQ(r, whole.reasoning.value_or("")) << "seed " << seed << ": " << text;
    EXPECT_EQ(c, whole.content.value_or("")) << "seed " << seed << ": " << text;
  }
}

const std::string kCall = "<tool_call>\n<function=f>\n</function>\n</tool_call>";

TEST(ReasoningParser, Qwen3SplitsAsVllm) {
  const Case cases[] = {
      // Qwen3.5: the prompt opened <think>; the output closes it.
      {"I think.\n</think>\n\nAnswer.", "I think.\n", "\n\nAnswer."},
      // Older templates: the model writes <think> itself.
      {"<think>hmm</think>ok", "hmm", "ok"},
      // No </think>: truncated thinking, all reasoning.
      {"still thinking", "still thinking", std::nullopt},
      {"</think>only content", std::nullopt, "only content"},
      {"done</think>", "done", std::nullopt},
      // A call inside unclosed thinking ends the reasoning (vLLM's implicit end) ...
      {"plan\n" + kCall, "plan\n", kCall},
      // ... but a </think> wins: a call written inside closed thinking is reasoning.
      {"plan " + kCall + " more</think>after", "plan " + kCall + " more", "after"},
      // <tool_call> not followed by <function is prose.
      {"the <tool_call> tag is", "the <tool_call> tag is", std::nullopt},
  };
  for (const Case& c : cases) {
    const ReasoningSplit s = extract_reasoning(ReasoningFormat::kQwen3, c.text);
    EXPECT_EQ(s.reasoning, c.reasoning) << c.text;
    EXPECT_EQ(s.content, c.content) << c.text;
    expect_stream_matches(ReasoningFormat::kQwen3, c.text);
  }
}

TEST(ReasoningParser, DeepSeekR1HasNoImplicitEnd) {
  const ReasoningSplit s = extract_reasoning(ReasoningFormat::kDeepSeekR1, "plan\n" + kCall);
  EXPECT_EQ(s.reasoning, "plan\n" + kCall);
  EXPECT_FALSE(s.content);
  const ReasoningSplit t = extract_reasoning(ReasoningFormat::kDeepSeekR1, "<think>a</think>b");
  EXPECT_EQ(t.reasoning, "a");
  EXPECT_EQ(t.content, "b");
  expect_stream_matches(ReasoningFormat::kDeepSeekR1, "<think>a</think>b");
  expect_stream_matches(ReasoningFormat::kDeepSeekR1, "<thi");
}

TEST(ReasoningParser, StreamsReasoningBeforeTheEndTag) {
  StreamingReasoningParser p(ReasoningFormat::kQwen3);
  EXPECT_EQ(p.feed("Let me ", false).reasoning, "Let me ");
  ReasoningDelta d = p.feed("see</th", false);
  EXPECT_EQ(d.reasoning, "see");  // "</th" may begin </think>
  d = p.feed("ink>\n\nHi", false);
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "\n\nHi");
  EXPECT_EQ(p.feed(" there", false).content, " there");
}

// The real Qwen3.5 template: enable_thinking=false closes the reasoning in the prompt,
// the default leaves "<think>\n" open.
TEST(ReasoningParser, PromptEndsReasoningWithTheRealTemplate) {
  const ChatTemplate t =
      ChatTemplate::from_dir(std::string(VTLLM_SOURCE_DIR) + "/tests/fixtures/qwen3_5-tiny-vl");
  nlohmann::json req = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                        {"add_generation_prompt", true}};
  const std::string open = t.render_request(req.dump());
  EXPECT_TRUE(open.ends_with("<|im_start|>assistant\n<think>\n")) << open;
  EXPECT_FALSE(prompt_ends_reasoning(open));
  req["chat_template_kwargs"] = {{"enable_thinking", false}};
  const std::string closed = t.render_request(req.dump());
  EXPECT_TRUE(closed.ends_with("<think>\n\n</think>\n\n")) << closed;
  EXPECT_TRUE(prompt_ends_reasoning(closed));
  EXPECT_FALSE(prompt_ends_reasoning("no tags at all"));
}

// The id rule (where a constraint starts) agrees with the text rule (where the split
// runs) on texts of random tags and words, as the tiny model's tokenizer encodes them.
TEST(ReasoningParser, PromptIdsEndReasoningAgreesWithTheText) {
  const text::Tokenizer tok =
      text::Tokenizer::from_dir(std::string(VTLLM_SOURCE_DIR) + "/models/tiny-qwen3.5");
  const std::optional<ReasoningTokenIds> tags = reasoning_token_ids(tok);
  ASSERT_TRUE(tags);
  EXPECT_EQ(tags->start, tok.token_to_id("<think>"));
  EXPECT_EQ(tags->end, *tok.token_to_id("</think>"));
  const char* const pieces[] = {"<think>", "</think>", "a", " word", "\n", "<tool_call>"};
  std::mt19937 rng(7);
  int ended = 0;
  for (int i = 0; i < 300; ++i) {
    std::string text;
    for (int n = int(rng() % 7); n > 0; --n) text += pieces[rng() % 6];
    const std::vector<int32_t> ids = tok.encode(text, false);
    EXPECT_EQ(prompt_ids_end_reasoning(ids, *tags), prompt_ends_reasoning(text)) << text;
    ended += prompt_ends_reasoning(text);
  }
  EXPECT_GT(ended, 30);
  EXPECT_LT(ended, 270);
  EXPECT_FALSE(prompt_ids_end_reasoning({}, *tags));
}

TEST(ReasoningParser, ToolCallsInsideReasoningAreNotCalls) {
  ChatOutputConfig cfg;
  cfg.reasoning = ReasoningFormat::kQwen3;
  cfg.tool_calls = ToolCallFormat::kQwen3Coder;
  const std::string text = "maybe " + kCall + "</think>\n\nNo call needed.";
  const ChatOutput out = parse_chat_output(cfg, text);
  EXPECT_TRUE(out.tool_calls.empty());
  EXPECT_EQ(out.reasoning, "maybe " + kCall);
  EXPECT_EQ(out.content, "\n\nNo call needed.");
  // The implicit end hands the call to the tool parser.
  const ChatOutput call = parse_chat_output(cfg, "plan\n" + kCall);
  ASSERT_EQ(call.tool_calls.size(), 1u);
  EXPECT_EQ(call.tool_calls[0].name, "f");
  EXPECT_EQ(call.tool_calls[0].arguments, "{}");
  EXPECT_FALSE(call.content);
  EXPECT_EQ(call.reasoning, "plan\n");
}

TEST(ReasoningParser, FormatNames) {
  EXPECT_EQ(reasoning_format_from_name("qwen3"), ReasoningFormat::kQwen3);
  EXPECT_EQ(reasoning_format_from_name("deepseek_r1"), ReasoningFormat::kDeepSeekR1);
  EXPECT_FALSE(reasoning_format_from_name("granite"));
}

}  // namespace
}  // namespace vtllm::server
