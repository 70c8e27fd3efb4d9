#include "server/protocol.h"

#include <gtest/gtest.h>

#include <string>

#include "expect_api_error.h"

namespace vtllm::server {
namespace {

TEST(Protocol, CompletionReadsEveryField) {
  const CompletionRequest r = parse_completion_request(R"({
    "model": "m", "prompt": "hello", "n": 3, "max_tokens": 7, "temperature": 0.5,
    "top_p": 0.9, "top_k": 40, "min_p": 0.05, "presence_penalty": 0.25,
    "frequency_penalty": -0.5, "repetition_penalty": 1.1, "logit_bias": {"17": -100, "3": 2.5},
    "seed": -5, "stop": ["a", "bc"], "stop_token_ids": [9, 8], "ignore_eos": true,
    "min_tokens": 2, "include_stop_str_in_output": true, "skip_special_tokens": false,
    "stream": true, "stream_options": {"include_usage": true}, "logprobs": 4, "echo": false,
    "user": "u", "some_unknown_field": {"x": [1, 2]}})");
  const GenerationRequest& g = r.gen;
  EXPECT_EQ(g.model, "m");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(*r.prompts[0].text, "hello");
  EXPECT_EQ(g.n, 3);
  EXPECT_EQ(*g.max_tokens, 7);
  EXPECT_FLOAT_EQ(g.temperature, 0.5f);
  EXPECT_FLOAT_EQ(g.top_p, 0.9f);
  EXPECT_EQ(g.top_k, 40);
  EXPECT_FLOAT_EQ(g.min_p, 0.05f);
  EXPECT_FLOAT_EQ(g.presence_penalty, 0.25f);
  EXPECT_FLOAT_EQ(g.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(g.repetition_penalty, 1.1f);
  ASSERT_EQ(g.logit_bias.size(), 2u);
  // nlohmann objects iterate in key order: "17" < "3".
  EXPECT_EQ(g.logit_bias[0].first, 17);
  EXPECT_FLOAT_EQ(g.logit_bias[0].second, -100.0f);
  EXPECT_EQ(g.logit_bias[1].first, 3);
  EXPECT_EQ(*g.seed, -5);
  EXPECT_EQ(g.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(g.stop_token_ids, (std::vector<int32_t>{9, 8}));
  EXPECT_TRUE(g.ignore_eos);
  EXPECT_EQ(g.min_tokens, 2);
  EXPECT_TRUE(g.include_stop_str_in_output);
  EXPECT_FALSE(g.skip_special_tokens);
  EXPECT_TRUE(g.stream);
  EXPECT_TRUE(g.stream_options.include_usage);
  EXPECT_EQ(*g.logprobs, 4);
  EXPECT_EQ(g.user, "u");

  const engine::SamplingParams p = to_sampling_params(g, 7);
  EXPECT_EQ(p.n, 3);
  EXPECT_EQ(p.max_tokens, 7);
  EXPECT_EQ(*p.seed, uint64_t(int64_t(-5)));
  EXPECT_EQ(*p.logprobs, 4);
  EXPECT_EQ(p.stop, g.stop);
  EXPECT_NO_THROW(p.validate(100));
}

TEST(Protocol, DefaultsAndNullsAreAbsent) {
  const CompletionRequest r = parse_completion_request(
      R"({"prompt": [1, 2, 3], "n": null, "max_tokens": null, "stop": null, "seed": null})");
  EXPECT_EQ(r.gen.n, 1);
  EXPECT_FALSE(r.gen.max_tokens);
  EXPECT_FALSE(r.gen.seed);
  EXPECT_TRUE(r.gen.stop.empty());
  EXPECT_FLOAT_EQ(r.gen.temperature, 1.0f);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_FALSE(r.prompts[0].text);
  EXPECT_EQ(r.prompts[0].token_ids, (std::vector<int32_t>{1, 2, 3}));
}

TEST(Protocol, SamplingDefaultsFillOnlyWhatTheRequestLeavesOut) {
  io::GenerationConfig gc;
  gc.temperature = 0.6;
  gc.top_k = 20;
  gc.top_p = 1.0;               // transformers' default: not in to_diff_dict, not applied
  gc.repetition_penalty = 1.05;
  gc.do_sample = false;         // not read, as vLLM
  gc.max_new_tokens = 64;
  const SamplingDefaults d = SamplingDefaults::from_generation_config(gc);
  EXPECT_FALSE(d.top_p.has_value());
  EXPECT_EQ(d.max_tokens.value_or(0), 64);
  EXPECT_EQ(d.describe(), "temperature=0.6 top_k=20 repetition_penalty=1.05 max_tokens=64");
  const ChatCompletionRequest left_out =
      parse_chat_completion_request(R"({"messages": [{"role": "user", "content": "x"}]})", d);
  EXPECT_FLOAT_EQ(left_out.gen.temperature, 0.6f);
  EXPECT_EQ(left_out.gen.top_k, 20);
  EXPECT_FLOAT_EQ(left_out.gen.top_p, 1.0f);
  EXPECT_FLOAT_EQ(left_out.gen.repetition_penalty, 1.05f);
  const CompletionRequest given = parse_completion_request(
      R"({"prompt": "x", "temperature": 0, "top_k": -1, "repetition_penalty": null})", d);
  EXPECT_FLOAT_EQ(given.gen.temperature, 0.0f);
  EXPECT_EQ(given.gen.top_k, -1);
  EXPECT_FLOAT_EQ(given.gen.repetition_penalty, 1.05f);  // null is absent
  EXPECT_TRUE(SamplingDefaults::from_generation_config({}).empty());
}

TEST(Protocol, PromptForms) {
  auto r = parse_completion_request(R"({"prompt": ["a", "b"], "stop": "x"})");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(*r.prompts[1].text, "b");
  EXPECT_EQ(r.gen.stop, std::vector<std::string>{"x"});
  r = parse_completion_request(R"({"prompt": [[5], [6, 7]], "max_tokens": 3.0})");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].token_ids, (std::vector<int32_t>{6, 7}));
  EXPECT_EQ(*r.gen.max_tokens, 3);
}

TEST(Protocol, ChatReadsMessagesAndLogprobs) {
  const ChatCompletionRequest r = parse_chat_completion_request(R"({
    "model": "m", "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
       "name": "bob"},
      {"role": "assistant", "content": null}],
    "max_completion_tokens": 5, "logprobs": true, "top_logprobs": 3})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "a\nb");
  EXPECT_EQ(r.messages[1].name, "bob");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(*r.gen.max_tokens, 5);
  EXPECT_EQ(*r.gen.logprobs, 3);
  EXPECT_TRUE(r.add_generation_prompt);

  const auto no_top = parse_chat_completion_request(
      R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true})");
  EXPECT_EQ(*no_top.gen.logprobs, 0);
  const auto off = parse_chat_completion_request(
      R"({"messages": [{"role": "user", "content": "x"}], "logprobs": false})");
  EXPECT_FALSE(off.gen.logprobs);
}

// vLLM's CompletionRequest.to_sampling_params: echo with logprobs asks for the prompt's
// logprobs at that N unless prompt_logprobs says otherwise; max_tokens 0 only with echo;
// prompt_logprobs 0 passes with stream (vLLM refuses only > 0 there).
TEST(Protocol, PromptLogprobsAndEcho) {
  CompletionRequest r = parse_completion_request(R"({"prompt": "a", "prompt_logprobs": 3})");
  EXPECT_EQ(r.gen.prompt_logprobs, 3);
  EXPECT_EQ(to_sampling_params(r.gen, 5).prompt_logprobs, 3);
  r = parse_completion_request(R"({"prompt": "a", "echo": true, "logprobs": 2})");
  EXPECT_EQ(r.gen.prompt_logprobs, 2);
  EXPECT_FALSE(r.echo_only);
  r = parse_completion_request(R"({"prompt": "a", "echo": true, "logprobs": 2,
                                   "prompt_logprobs": 4})");
  EXPECT_EQ(r.gen.prompt_logprobs, 4);
  r = parse_completion_request(R"({"prompt": "a", "echo": true})");
  EXPECT_FALSE(r.gen.prompt_logprobs.has_value());
  r = parse_completion_request(R"({"prompt": "a", "echo": true, "max_tokens": 0})");
  EXPECT_TRUE(r.echo_only);
  r = parse_completion_request(R"({"prompt": "a", "prompt_logprobs": 0, "stream": true})");
  EXPECT_EQ(r.gen.prompt_logprobs, 0);
  const ChatCompletionRequest c = parse_chat_completion_request(
      R"({"messages": [{"role": "user", "content": "a"}], "prompt_logprobs": 1})");
  EXPECT_EQ(c.gen.prompt_logprobs, 1);
}

TEST(Protocol, MalformedBodies) {
  EXPECT_API_ERROR(parse_completion_request(""), 400, "", "invalid_json");
  EXPECT_API_ERROR(parse_completion_request("{\"prompt\": \"a\""), 400, "", "invalid_json");
  EXPECT_API_ERROR(parse_completion_request("[1, 2]"), 400, "", "invalid_json");
  EXPECT_API_ERROR(parse_completion_request("{\"prompt\": \"\xff\xfe\"}"), 400, "", "invalid_utf8");
  EXPECT_API_ERROR(parse_completion_request("{\"prompt\": \"\xc3\"}"), 400, "", "invalid_utf8");
  // A lone surrogate escape is not a character either.
  EXPECT_API_ERROR(parse_completion_request(R"({"prompt": "\ud800"})"), 400, "", "invalid_json");
}

struct BadField {
  const char* body;
  const char* param;
  const char* code;
};

TEST(Protocol, BadCompletionFieldsNameTheField) {
  const BadField cases[] = {
      {R"({})", "prompt", "missing_field"},
      {R"({"prompt": 5})", "prompt", "invalid_type"},
      {R"({"prompt": []})", "prompt", "invalid_type"},
      {R"({"prompt": ["a", 1]})", "prompt", "invalid_type"},
      {R"({"prompt": [[]]})", "prompt", "invalid_value"},
      {R"({"prompt": [-1]})", "prompt", "invalid_value"},
      {R"({"prompt": "a", "max_tokens": -1})", "max_tokens", "invalid_value"},
      {R"({"prompt": "a", "max_tokens": 0})", "max_tokens", "invalid_value"},
      {R"({"prompt": "a", "max_tokens": "10"})", "max_tokens", "invalid_type"},
      {R"({"prompt": "a", "max_tokens": 1.5})", "max_tokens", "invalid_type"},
      {R"({"prompt": "a", "n": 0})", "n", "invalid_value"},
      {R"({"prompt": "a", "n": 1000000})", "n", "invalid_value"},
      {R"({"prompt": ["a", "b", "c"], "n": 100})", "n", "invalid_value"},
      {R"({"prompt": "a", "temperature": -0.1})", "temperature", "invalid_value"},
      {R"({"prompt": "a", "temperature": "hot"})", "temperature", "invalid_type"},
      {R"({"prompt": "a", "top_p": 0})", "top_p", "invalid_value"},
      {R"({"prompt": "a", "top_p": 1.01})", "top_p", "invalid_value"},
      {R"({"prompt": "a", "top_k": -2})", "top_k", "invalid_value"},
      {R"({"prompt": "a", "min_p": 2})", "min_p", "invalid_value"},
      {R"({"prompt": "a", "presence_penalty": 2.5})", "presence_penalty", "invalid_value"},
      {R"({"prompt": "a", "frequency_penalty": -3})", "frequency_penalty", "invalid_value"},
      {R"({"prompt": "a", "repetition_penalty": 0})", "repetition_penalty", "invalid_value"},
      {R"({"prompt": "a", "logit_bias": [1]})", "logit_bias", "invalid_type"},
      {R"({"prompt": "a", "logit_bias": {"x": 1}})", "logit_bias", "invalid_value"},
      {R"({"prompt": "a", "logit_bias": {"-1": 1}})", "logit_bias", "invalid_value"},
      {R"({"prompt": "a", "logit_bias": {"5": 101}})", "logit_bias", "invalid_value"},
      {R"({"prompt": "a", "logit_bias": {"5": "1"}})", "logit_bias", "invalid_type"},
      {R"({"prompt": "a", "seed": 1e30})", "seed", "invalid_type"},
      {R"({"prompt": "a", "stop": 3})", "stop", "invalid_type"},
      {R"({"prompt": "a", "stop": ["a", 3]})", "stop", "invalid_type"},
      {R"({"prompt": "a", "stream": "yes"})", "stream", "invalid_type"},
      {R"({"prompt": "a", "stream_options": {"include_usage": true}})", "stream_options",
       "invalid_value"},
      {R"({"prompt": "a", "logprobs": 21})", "logprobs", "invalid_value"},
      {R"({"prompt": "a", "logprobs": true})", "logprobs", "invalid_type"},
      {R"({"prompt": "a", "echo": true, "logprobs": 1, "stream": true, "n": 2})", "echo",
       "unsupported"},
      {R"({"prompt": "a", "prompt_logprobs": 21})", "prompt_logprobs", "invalid_value"},
      {R"({"prompt": "a", "prompt_logprobs": -1})", "prompt_logprobs", "invalid_value"},
      {R"({"prompt": "a", "prompt_logprobs": 1.5})", "prompt_logprobs", "invalid_type"},
      {R"({"prompt": "a", "prompt_logprobs": 1, "stream": true})", "prompt_logprobs",
       "invalid_value"},
      {R"({"prompt": "a", "suffix": "z"})", "suffix", "unsupported"},
      {R"({"prompt": "a", "min_tokens": 5, "max_tokens": 2})", "min_tokens", "invalid_value"},
      {R"({"prompt": "a", "model": 7})", "model", "invalid_type"},
      {R"({"prompt": "a", "stream": true, "stream_options": {"include_usage": 1}})",
       "stream_options.include_usage", "invalid_type"},
      {R"({"prompt": "a", "max_tokens": 18446744073709551615})", "max_tokens", "invalid_value"},
  };
  for (const BadField& c : cases) {
    SCOPED_TRACE(c.body);
    EXPECT_API_ERROR(parse_completion_request(c.body), 400, c.param, c.code);
  }
}

TEST(Protocol, BadChatFieldsNameTheField) {
  const BadField cases[] = {
      {R"({})", "messages", "missing_field"},
      {R"({"messages": []})", "messages", "invalid_value"},
      {R"({"messages": "hi"})", "messages", "invalid_type"},
      {R"({"messages": [5]})", "messages[0]", "invalid_type"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role", "missing_field"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role",
       "invalid_value"},
      {R"({"messages": [{"role": "user", "content": 3}]})", "messages[0].content", "invalid_type"},
      {R"({"messages": [{"role": 5, "content": "x"}]})", "messages[0].role", "invalid_type"},
      {R"({"messages": [{"role": "user", "content": "x", "name": []}]})", "messages[0].name",
       "invalid_type"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
          {"type": "text", "text": 7}]}]})",
       "messages[0].content[1].text", "invalid_type"},
      {R"({"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]})",
       "messages[0].content", "unsupported"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens",
       "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "prompt_logprobs": 2,
          "stream": true})",
       "prompt_logprobs", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs",
       "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 99})",
       "top_logprobs", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": -4})",
       "max_completion_tokens", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})",
       "tools[0].function", "missing_field"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}})",
       "response_format.type", "unsupported"},
      {R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true})",
       "continue_final_message", "invalid_value"},
  };
  for (const BadField& c : cases) {
    SCOPED_TRACE(c.body);
    EXPECT_API_ERROR(parse_chat_completion_request(c.body), 400, c.param, c.code);
  }
}

}  // namespace
}  // namespace vtllm::server

namespace vtllm::server {
namespace {

// allowed_token_ids and bad_words reach the engine's params on both endpoints; an empty
// allowed list (vLLM: "allowed_token_ids is not None and empty!") and a non-string word
// are 400s naming the field.
TEST(Protocol, AllowedTokenIdsAndBadWordsReachTheParams) {
  const char* fields = R"("allowed_token_ids": [5, 9, 5], "bad_words": ["foo", " bar baz"])";
  const CompletionRequest c = parse_completion_request(str_cat(R"({"prompt": "a", )", fields, "}"));
  const ChatCompletionRequest chat = parse_chat_completion_request(
      str_cat(R"({"messages": [{"role": "user", "content": "a"}], )", fields, "}"));
  for (const GenerationRequest* g : {&c.gen, &chat.gen}) {
    const engine::SamplingParams p = to_sampling_params(*g, 8);
    ASSERT_TRUE(p.allowed_token_ids.has_value());
    EXPECT_EQ(*p.allowed_token_ids, (std::vector<int32_t>{5, 9, 5}));
    EXPECT_EQ(p.bad_words, (std::vector<std::string>{"foo", " bar baz"}));
    EXPECT_TRUE(p.bad_words_token_ids.empty());  // tokenized by the engine at add_request
  }
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "a"})").gen.allowed_token_ids.has_value());
  EXPECT_API_ERROR(parse_completion_request(R"({"prompt": "a", "allowed_token_ids": []})"), 400,
                   "allowed_token_ids", "invalid_value");
  EXPECT_API_ERROR(parse_completion_request(R"({"prompt": "a", "allowed_token_ids": [-1]})"), 400,
                   "allowed_token_ids", "invalid_value");
  EXPECT_API_ERROR(parse_completion_request(R"({"prompt": "a", "bad_words": "x"})"), 400,
                   "bad_words", "invalid_type");
  EXPECT_API_ERROR(parse_completion_request(R"({"prompt": "a", "bad_words": [1]})"), 400,
                   "bad_words", "invalid_type");
}

// Fields vLLM accepts that need engine work vtllm lacks: each active value is a
// 400 naming it; the neutral value of each passes.
TEST(Protocol, UnimplementedVllmFieldsAreRefusedByNameUnlessNeutral) {
  const std::pair<const char*, const char*> active[] = {
      {"use_beam_search", "true"},
      {"return_tokens_as_token_ids", "true"},
      {"logits_processors", R"(["p"])"},
  };
  for (const auto& [name, value] : active) {
    SCOPED_TRACE(name);
    const std::string field = str_cat("\"", name, "\": ", value);
    EXPECT_API_ERROR(parse_completion_request(str_cat(R"({"prompt": "a", )", field, "}")), 400,
                     name, "unsupported");
    EXPECT_API_ERROR(parse_chat_completion_request(str_cat(
                         R"({"messages": [{"role": "user", "content": "a"}], )", field, "}")),
                     400, name, "unsupported");
  }
  const char* neutral =
      R"({"prompt": "a", "allowed_token_ids": null, "bad_words": [], "prompt_logprobs": null,
          "use_beam_search": false, "return_token_ids": false, "guided_json": null})";
  EXPECT_NO_THROW(parse_completion_request(neutral));
  EXPECT_API_ERROR(parse_chat_completion_request(
                       R"({"messages": [{"role": "user", "content": "a"}], "echo": true})"),
                   400, "echo", "unsupported");
  EXPECT_API_ERROR(
      parse_chat_completion_request(
          R"({"messages": [{"role": "user", "content": "a"}], "chat_template": "{{ x }}"})"),
      400, "chat_template", "unsupported");
  EXPECT_API_ERROR(
      parse_completion_request(
          R"({"prompt": "a", "stream": true, "stream_options": {"continuous_usage_stats": true}})"),
      400, "stream_options.continuous_usage_stats", "unsupported");
  EXPECT_API_ERROR(parse_completion_request(R"({"prompt": "a", "truncate_prompt_tokens": 0})"), 400,
                   "truncate_prompt_tokens", "invalid_value");
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "truncate_prompt_tokens": 3})")
                .gen.truncate_prompt_tokens,
            3);
  EXPECT_EQ(parse_chat_completion_request(R"({"messages": [{"role": "user", "content": "a"}],
                "chat_template_kwargs": {"enable_thinking": false}})")
                .chat_template_kwargs,
            R"({"enable_thinking":false})");
}

}  // namespace
}  // namespace vtllm::server
