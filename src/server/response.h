// The response bodies of /v1/completions and /v1/chat/completions: whole JSON
// responses, server-sent-event chunks, usage and error objects.
//
// Every function returns serialized JSON (or an SSE frame) as a string, so this
// header stays free of the JSON library. Text that is not valid UTF-8 (a token
// that is a partial character) is written with U+FFFD in its place; a logprob of
// -inf, which JSON cannot hold, is written as -9999.0 as vLLM does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/tool_parser.h"

namespace vtllm::server {

struct TopLogprob {
  std::string token;
  float logprob = 0;
};

// One output token's logprob with the top alternatives. `none`: a token without a
// logprob (the echoed prompt's first): null in token_logprobs and top_logprobs.
struct TokenLogprob {
  std::string token;
  float logprob = 0;
  std::vector<TopLogprob> top;
  bool none = false;
};

// vLLM's Logprob as prompt_logprobs carry it: {"logprob", "rank", "decoded_token"},
// keyed by token id.
struct RankedLogprob {
  int32_t token_id = 0;
  float logprob = 0;
  int64_t rank = 0;
  std::string decoded_token;
};

// One prompt position of prompt_logprobs: null (the first token), else the prompt token
// first and then its top-N (a token in both appears once, at the first place).
using PromptPositionLogprobs = std::optional<std::vector<RankedLogprob>>;

struct Choice {
  int index = 0;
  std::string text;
  std::string finish_reason;  // "stop", "length", "abort"; empty: null (still running)
  bool has_logprobs = false;  // whether the request asked for logprobs
  std::vector<TokenLogprob> logprobs;
  // Completions' text_offset counts from here: the length of the text already sent
  // for this choice (plus the echoed prompt).
  size_t text_offset = 0;
  // vLLM's stop_reason: the stop token id or the stop string that ended the
  // choice; neither (null): eos, length, still running.
  std::optional<int32_t> stop_token;
  std::string stop_string;
  // Completions' per-choice prompt_logprobs (null when not asked for); chat writes the
  // first choice's as the response's top-level prompt_logprobs, as vLLM does.
  std::optional<std::vector<PromptPositionLogprobs>> prompt_logprobs;
  // return_token_ids (vLLM's): the choice's output ids (in a chunk: the new ones) and its
  // prompt's ids (completions per choice, chat at the top level of the response).
  std::optional<std::vector<int32_t>> token_ids;
  std::optional<std::vector<int32_t>> prompt_token_ids;
  // Chat with a reasoning or tool-call parser. `reasoning`: written as both "reasoning"
  // and "reasoning_content" (vLLM's name and the older one); in a chunk an empty one is
  // left out. `tool_calls`: whole calls in a response; in a chunk the call's pieces (id
  // and name only in its first). `content_null`: the message's content is null.
  std::optional<std::string> reasoning;
  std::vector<ToolCallDelta> tool_calls;
  bool content_null = false;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

// What every response of one request shares: "cmpl-..." or "chatcmpl-...", the
// creation time in Unix seconds and the model name.
struct ResponseHeader {
  std::string id;
  int64_t created = 0;
  std::string model;
};

// {"object": "text_completion", "choices": [...], "usage": {...}}.
std::string completion_response(const ResponseHeader& h, const std::vector<Choice>& choices,
                                const Usage& usage);
// {"object": "chat.completion", "choices": [{"message": {"role": "assistant", ...}}], ...}.
std::string chat_completion_response(const ResponseHeader& h, const std::vector<Choice>& choices,
                                     const Usage& usage);

// Streaming chunks. `with_usage` (stream_options.include_usage) adds "usage": null
// to every chunk but the final usage chunk, as OpenAI documents.
std::string completion_chunk(const ResponseHeader& h, const Choice& c, bool with_usage);
// The first chunk of a chat choice: delta {"role": "assistant", "content": ""}; with
// return_token_ids, the prompt's ids at the top level (as vLLM's first chat chunk).
std::string chat_role_chunk(const ResponseHeader& h, int index, bool with_usage,
                            const std::vector<int32_t>* prompt_token_ids = nullptr);
// A content delta; finish_reason set on the last one.
std::string chat_chunk(const ResponseHeader& h, const Choice& c, bool with_usage);
// The last chunk when include_usage is set: "choices": [] and the usage.
std::string usage_chunk(const ResponseHeader& h, bool chat, const Usage& usage);

// "data: <json>\n\n", and the terminator every stream ends with.
std::string sse_event(std::string_view json);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// {"error": {"message", "type", "param", "code"}}.
std::string error_body(const ApiError& e);

}  // namespace vtllm::server
