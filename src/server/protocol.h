// The OpenAI request bodies of /v1/completions and /v1/chat/completions, parsed
// and validated into plain structs.
//
// Parsing is strict about what it knows and lenient about what it does not, as
// vLLM is: a known field with the wrong JSON type or an out-of-range value is an
// ApiError 400 whose param names the field; a field it does not know is ignored
// (vLLM's request models use pydantic extra="allow" and only log them). JSON
// null counts as absent for every optional field, as the OpenAI clients send it.
// A body that is not valid UTF-8 or not a JSON object is a 400 as well.
//
// Limits stated here (OpenAI or vLLM where they give one): n in [1, kMaxN],
// logprobs/top_logprobs in [0, kMaxLogprobs], temperature >= 0, top_p in (0, 1],
// top_k -1 or >= 0, min_p in [0, 1], presence/frequency penalty in [-2, 2],
// repetition_penalty > 0, logit_bias values in [-100, 100], max_tokens >= 1 (0 with
// completions' echo), prompt_logprobs in [0, kMaxLogprobs].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/request.h"
#include "io/config.h"
#include "server/tool_parser.h"

namespace vtllm::server {

inline constexpr int kMaxN = 128;
inline constexpr int kMaxLogprobs = 20;

struct StreamOptions {
  bool include_usage = false;
};

// Default sampling parameters for requests that leave them out: vLLM's
// get_diff_sampling_param. Taken from a generation_config.json's temperature, top_p,
// top_k, min_p, repetition_penalty and max_new_tokens (-> max_tokens), each only when
// it differs from transformers' GenerationConfig default (temperature 1, top_p 1,
// top_k 50, repetition_penalty 1: vLLM reads the file's to_diff_dict()); do_sample is
// not read (vLLM does not). max_tokens caps every request, given or not, as vLLM's
// get_max_tokens does.
struct SamplingDefaults {
  std::optional<float> temperature, top_p, min_p, repetition_penalty;
  std::optional<int> top_k;
  std::optional<int64_t> max_tokens;

  static SamplingDefaults from_generation_config(const io::GenerationConfig& g);
  bool empty() const;
  // "temperature=0.6 top_k=20 top_p=0.95": the fields that are set, for the startup log.
  std::string describe() const;
};

// A constraint on the output's text: vLLM's structured_outputs {json, regex, choice,
// grammar, json_object}, the older guided_json / guided_regex / guided_choice /
// guided_grammar, or response_format {json_object, json_schema}. One per request.
struct StructuredOutput {
  enum class Kind { kJson, kJsonObject, kRegex, kChoice, kGrammar } kind = Kind::kJson;
  std::string schema_json;           // kJson: the JSON Schema as JSON text
  std::string regex;                 // kRegex
  std::vector<std::string> choices;  // kChoice: non-empty
  std::string grammar;               // kGrammar: GBNF / EBNF text
  // response_format.json_schema.strict: accepted; the grammar is strict either way (vLLM).
  bool strict = false;
  // JSON whitespace between tokens (false: structured_outputs.disable_any_whitespace;
  // unset: the server's --structured-outputs-config, whose default is true).
  std::optional<bool> any_whitespace;
  std::string param;                 // the field it came from ("structured_outputs.json")
};

// Fields both endpoints share; absent fields keep these (vLLM's) defaults, or the
// server's SamplingDefaults where set.
struct GenerationRequest {
  std::string model;  // empty when absent: the served model
  int n = 1;
  std::optional<int64_t> max_tokens;  // max_tokens, or chat's max_completion_tokens
  float temperature = 1.0f;
  float top_p = 1.0f;
  int top_k = 0;
  float min_p = 0.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::optional<int64_t> seed;
  std::vector<std::string> stop;  // a string or an array of strings
  std::vector<int32_t> stop_token_ids;
  // vLLM's allowed_token_ids (non-empty; the engine checks the ids) and bad_words.
  std::optional<std::vector<int32_t>> allowed_token_ids;
  std::vector<std::string> bad_words;
  bool ignore_eos = false;
  int64_t min_tokens = 0;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  bool stream = false;
  StreamOptions stream_options;  // only allowed with stream = true
  // Top-N logprobs per output token: completions' `logprobs: N`, chat's
  // `top_logprobs: N` with `logprobs: true` (N = 0 there when absent).
  std::optional<int> logprobs;
  // vLLM's prompt_logprobs: top-N per prompt token, in [0, kMaxLogprobs]; refused with
  // stream = true when above 0 (vLLM's rule). Completions' echo with logprobs sets it to
  // logprobs when the request leaves it out (vLLM's CompletionRequest.to_sampling_params).
  std::optional<int> prompt_logprobs;
  std::string user;
  // Keep only the prompt's last N tokens (-1: the last max_model_len), as vLLM.
  std::optional<int64_t> truncate_prompt_tokens;
  // vLLM's return_token_ids: the prompt's and each choice's token ids in the response.
  bool return_token_ids = false;
  // structured_outputs / guided_* / (chat) response_format; nullopt: unconstrained.
  std::optional<StructuredOutput> structured;
};

// One prompt of a completion request: text, or token ids.
struct Prompt {
  std::optional<std::string> text;
  std::vector<int32_t> token_ids;  // when text is absent
};

struct CompletionRequest {
  GenerationRequest gen;
  std::vector<Prompt> prompts;  // `prompt`: a string, strings, token ids or lists of them
  bool echo = false;            // the prompt (and with logprobs its logprobs) before each choice
  // echo with max_tokens 0 (vLLM's scoring form): the choice is the prompt only; the
  // engine still samples one token (vLLM runs it with max_tokens 1), counted in usage.
  bool echo_only = false;
};

// One part of a message's content array.
struct ContentPart {
  enum class Kind { kText, kImage, kVideo } kind = Kind::kText;
  std::string text;   // kText
  std::string url;    // kImage, kVideo: image_url / video_url (object or string form)
  std::string param;  // "messages[i].content[k]", for errors
};

struct ChatMessage {
  std::string role;     // system, user, assistant, tool, developer
  std::string content;  // a string, or the text parts joined with "\n" (as vLLM does)
  std::string name;
  // The parts in order when content is an array holding an image or a video (the chat
  // template then sees them as {"type": "text"|"image"|"video"} items); else empty.
  std::vector<ContentPart> parts;
  // An assistant message's tool_calls as the chat template reads them: a JSON array of
  // {"id", "type": "function", "function": {"name", "arguments": {...}}} with the
  // arguments string parsed to an object (as vLLM does); empty when absent.
  std::string tool_calls_json;
  std::string tool_call_id;              // a tool message's
  std::optional<std::string> reasoning;  // `reasoning` or `reasoning_content` (assistant)
  bool content_null = false;             // content absent or null
};

// tool_choice: "none", "auto", "required" or {"type": "function", "function": {"name"}}.
enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct ChatCompletionRequest {
  GenerationRequest gen;
  std::vector<ChatMessage> messages;  // never empty
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  // `chat_template_kwargs` as JSON object text (extra template variables such as
  // enable_thinking); empty when absent.
  std::string chat_template_kwargs;
  // `tools` as given (JSON array text, key order kept) for the template; empty when
  // absent or empty. Each is {"type": "function", "function": {"name", ...}}.
  std::string tools_json;
  std::vector<ToolFunction> tools;
  // Absent: kAuto with tools, else kNone (OpenAI's default); "required" with no tools
  // is kNone (vLLM). Set without tools, or naming a tool not in `tools`: 400.
  ToolChoice tool_choice = ToolChoice::kNone;
  std::string tool_choice_name;  // kNamed
  bool parallel_tool_calls = true;
};

// Throw ApiError (400) naming the first field at fault. `defaults` fill the sampling
// fields the body leaves out (max_tokens is capped later, by the service).
CompletionRequest parse_completion_request(std::string_view body,
                                           const SamplingDefaults& defaults = {});
ChatCompletionRequest parse_chat_completion_request(std::string_view body,
                                                    const SamplingDefaults& defaults = {});

// The engine's SamplingParams for a request; `max_tokens` is the resolved budget
// (the request's, or what is left of the context when it gave none).
engine::SamplingParams to_sampling_params(const GenerationRequest& gen, int64_t max_tokens);

}  // namespace vtllm::server
